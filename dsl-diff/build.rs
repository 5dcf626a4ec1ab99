//! Writes the differential test's kernels: random expression trees over every operator, cast,
//! literal form and numeric method of the `#[kernel]` subset, on every scalar type of the type
//! table, with edge values (0, -1, MIN, MAX, NaN, ±inf, subnormals, shift counts past the bit
//! width). A fixed seed: the same kernels on every machine.

use std::fmt::Write as _;

use opbox_codegen::cuda::dsl_prelude::{is_exact_method, MethodOn, DSL_METHODS};
use opbox_codegen::cuda::ElemType;

const KERNELS: usize = 520;
const SEED: u64 = 0x0b0c_5eed_d1ff_2026;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
    fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len())]
    }
}

fn is_float(t: ElemType) -> bool {
    t.is_floating_point()
}
fn is_half(t: ElemType) -> bool {
    matches!(t, ElemType::F16 | ElemType::BF16)
}
fn is_signed(t: ElemType) -> bool {
    t.rust_name().starts_with('i') || is_float(t)
}
/// The DSL's numeric types: the table's element rows but bool, float8 and the 16-bit integers,
/// which `#[kernel]` refuses.
fn numeric() -> Vec<ElemType> {
    ElemType::ALL
        .into_iter()
        .filter(|t| {
            !matches!(
                t,
                ElemType::Bool
                    | ElemType::F8E4M3
                    | ElemType::F8E5M2
                    | ElemType::I16
                    | ElemType::U16
                    | ElemType::Complex32
                    | ElemType::Complex64
            )
        })
        .collect()
}
fn ints() -> Vec<ElemType> {
    numeric().into_iter().filter(|t| !is_float(*t)).collect()
}

/// The type's range, for integer literals.
fn int_range(t: ElemType) -> (i128, i128) {
    let bits = t.size() as u32 * 8;
    if is_signed(t) {
        (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
    } else {
        (0, (1i128 << bits) - 1)
    }
}

/// A literal of type `t`, in one of the forms Rust allows: suffixed or not, negated, a type
/// constant, or (for halves, which have no literals) a cast.
fn literal(t: ElemType, r: &mut Rng) -> String {
    if is_half(t) {
        return format!("({} as {})", literal(ElemType::F32, r), t.rust_name());
    }
    let name = t.rust_name();
    if is_float(t) {
        let consts = [
            "NAN",
            "INFINITY",
            "NEG_INFINITY",
            "MAX",
            "MIN",
            "MIN_POSITIVE",
            "EPSILON",
        ];
        let subnormal = if t == ElemType::F32 {
            "1e-40"
        } else {
            "4e-320"
        };
        let plain = ["0.0", "1.0", "2.5", "0.1", "3.0", "1e10", subnormal, "0.5"];
        return match r.below(4) {
            0 => format!("{name}::{}", r.pick(&consts)),
            1 => format!("{}{name}", r.pick(&plain)),
            2 => format!("(-{})", r.pick(&plain)),
            _ => r.pick(&plain).to_string(),
        };
    }
    let (lo, hi) = int_range(t);
    let v: i128 = match r.below(8) {
        0 => lo,
        1 => hi,
        2 => 0,
        3 => 1,
        4 => (r.below(70) as i128).min(hi),
        5 if lo < 0 => -1,
        _ => (r.next() as i128).rem_euclid(hi - lo + 1) + lo,
    };
    let text = if v < 0 {
        format!("(-{})", -v)
    } else {
        v.to_string()
    };
    // Where nothing constrains it, an unsuffixed literal is an i32 (a cast's operand, a shift
    // count): past i32's range it needs its suffix.
    let fits_i32 = i32::try_from(v).is_ok();
    match r.below(3) {
        _ if !fits_i32 && v < 0 => format!("(-{}{name})", -v),
        _ if !fits_i32 => format!("{v}{name}"),
        0 if v < 0 => format!("(-{}{name})", -v),
        0 => format!("{v}{name}"),
        1 if v == lo && lo != 0 => format!("{name}::MIN"),
        1 if v == hi => format!("{name}::MAX"),
        _ => text,
    }
}

struct Gen<'a> {
    r: &'a mut Rng,
    exact: bool,
    /// The type of the kernel's inputs `x` and `y`.
    input: ElemType,
}

impl Gen<'_> {
    /// An expression of type `t`.
    fn expr(&mut self, t: ElemType, depth: usize) -> String {
        if depth == 0 || self.r.chance(20) {
            return self.leaf(t);
        }
        let d = depth - 1;
        let int = !is_float(t);
        match self.r.below(10) {
            0..=2 => {
                let ops: &[&str] = if int {
                    &["+", "-", "*", "/", "%", "&", "|", "^"]
                } else {
                    &["+", "-", "*", "/", "%"]
                };
                let op = self.r.pick(ops);
                format!("({} {op} {})", self.expr(t, d), self.expr(t, d))
            }
            3 if int => {
                let op = self.r.pick(&["<<", ">>"]);
                let count_ty = *self.r.pick(&ints());
                let count = if self.r.chance(50) {
                    self.leaf(count_ty)
                } else {
                    self.expr(count_ty, d)
                };
                format!("({} {op} {count})", self.expr(t, d))
            }
            4 if is_signed(t) => format!("(-{})", self.nonliteral(t, d)),
            4 if int => format!("(!{})", self.expr(t, d)),
            5 => {
                let from = *self.r.pick(&numeric());
                if int && self.r.chance(15) {
                    return format!("({} as {})", self.cond(d), t.rust_name());
                }
                format!("({} as {})", self.expr(from, d), t.rust_name())
            }
            6 | 7 => self.method(t, d),
            _ => format!(
                "(if {} {{ {} }} else {{ {} }})",
                self.cond(d),
                self.expr(t, d),
                self.expr(t, d)
            ),
        }
    }

    fn leaf(&mut self, t: ElemType) -> String {
        match self.r.below(3) {
            0 => self.var(t, "x"),
            1 => self.var(t, "y"),
            _ => literal(t, self.r),
        }
    }

    /// `x` or `y` read as type `t` (a cast when the kernel's type is another).
    fn var(&mut self, t: ElemType, v: &str) -> String {
        if t == self.input {
            v.to_string()
        } else {
            format!("({v} as {})", t.rust_name())
        }
    }

    /// An expression that is not a bare literal (a method receiver, a negation operand).
    fn nonliteral(&mut self, t: ElemType, d: usize) -> String {
        let e = self.expr(t, d);
        if e.starts_with(|c: char| {
            c.is_ascii_digit()
                || c == '(' && e[1..].starts_with(|c: char| c == '-' || c.is_ascii_digit())
        }) {
            format!("({e} as {})", t.rust_name())
        } else {
            e
        }
    }

    fn method(&mut self, t: ElemType, d: usize) -> String {
        let float = is_float(t);
        let usable: Vec<_> = DSL_METHODS
            .iter()
            .filter(|m| !m.returns_bool)
            .filter(|m| float || m.on == MethodOn::Numbers)
            // abs is a signed type's (Rust has no u32::abs).
            .filter(|m| m.rust != "abs" || is_signed(t))
            // Transcendental methods only at the root, where a few ulps cannot grow.
            .filter(|m| is_exact_method(m.rust) || d + 1 >= DEPTH)
            .collect();
        let m = *self.r.pick(&usable);
        if !is_exact_method(m.rust) {
            self.exact = false;
        }
        let recv = self.nonliteral(t, d);
        let args: Vec<String> = (0..m.args).map(|_| self.expr(t, d)).collect();
        if args.is_empty() {
            format!("{recv}.{}()", m.rust)
        } else {
            format!("{recv}.{}({})", m.rust, args.join(", "))
        }
    }

    fn cond(&mut self, d: usize) -> String {
        if d > 0 && self.r.chance(20) {
            let op = self.r.pick(&["&&", "||"]);
            return format!("({} {op} {})", self.cond(d - 1), self.cond(d - 1));
        }
        let u = *self.r.pick(&numeric());
        let op = self.r.pick(&["==", "!=", "<", "<=", ">", ">="]);
        format!(
            "({} {op} {})",
            self.expr(u, d.saturating_sub(1)),
            self.expr(u, d.saturating_sub(1))
        )
    }
}

const DEPTH: usize = 3;

fn edges(t: ElemType) -> String {
    let name = t.rust_name();
    if is_half(t) {
        let f = [
            "0.0",
            "-0.0",
            "1.0",
            "-1.5",
            "f32::NAN",
            "f32::INFINITY",
            "f32::NEG_INFINITY",
            "65504.0",
            "1e-7",
            "0.1",
            "3.0",
            "70000.0",
        ];
        let items: Vec<String> = f.iter().map(|v| format!("{name}::from_f32({v})")).collect();
        return format!("[{}]", items.join(", "));
    }
    if is_float(t) {
        let sub = if t == ElemType::F32 {
            "1e-40"
        } else {
            "4e-320"
        };
        let v = [
            "0.0",
            "-0.0",
            "1.0",
            "-1.5",
            "NAN",
            "INFINITY",
            "NEG_INFINITY",
            "MAX",
            "MIN_POSITIVE",
            sub,
            "0.1",
            "3.0",
        ];
        let items: Vec<String> = v
            .iter()
            .map(|x| {
                if x.chars().next().is_some_and(|c| c.is_ascii_uppercase()) {
                    format!("{name}::{x}")
                } else {
                    format!("{x}{name}")
                }
            })
            .collect();
        return format!("[{}]", items.join(", "));
    }
    let mut v: Vec<String> = vec![
        format!("{name}::MIN"),
        format!("{name}::MAX"),
        "0".into(),
        "1".into(),
        "7".into(),
        "31".into(),
        "33".into(),
        "64".into(),
        "100".into(),
    ];
    if is_signed(t) {
        v.push("-1".into());
        v.push("-65".into());
    }
    let (_, hi) = int_range(t);
    v.retain(|x| x.parse::<i128>().map_or(true, |n| n <= hi));
    format!(
        "[{}]",
        v.iter()
            .map(|x| format!("{x} as {name}"))
            .collect::<Vec<_>>()
            .join(", ")
    )
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let mut r = Rng(SEED);
    let types = numeric();
    let mut out =
        String::from("// Generated by dsl-diff/build.rs from a fixed seed: do not edit.\n");
    let mut cases = Vec::new();
    for k in 0..KERNELS {
        // Every type in turn, so each gets its share.
        let t = types[k % types.len()];
        let mut g = Gen {
            r: &mut r,
            exact: true,
            input: t,
        };
        let e = g.expr(t, DEPTH);
        let exact = g.exact;
        let name = format!("k{k:03}_{}", t.rust_name());
        let ty = t.rust_name();
        let _ = writeln!(
            out,
            "#[kernel(options = [\"--fmad=false\"])]\n#[allow(unused_parens, unused_variables, unused_comparisons, invalid_nan_comparisons)]\npub fn {name}(a: In<[{ty}]>, b: In<[{ty}]>, out: Out<[{ty}]>, n: u32) {{\n    let i = global_id_x();\n    if i < n {{\n        let x = a[i];\n        let y = b[i];\n        out[i] = {e};\n    }}\n}}\n"
        );
        let _ = writeln!(
            out,
            "#[allow(non_snake_case)]\nfn run_{name}(device: Device) -> opbox::Result<Vec<(u64, Option<i64>)>> {{\n    let edges: &[{ty}] = &{};\n    let (a, b, n) = pairs(edges, device)?;\n    let out = Tensor::zeros(&[n], DType::from_elem(opbox::cuda::codegen::ElemType::{:?}), device)?;\n    {name}::launch(LaunchConfig::for_elems(n), &a, &b, &out, n as u32)?;\n    read::<{ty}>(&out)\n}}\n",
            edges(t),
            t
        );
        cases.push(format!("    Case {{ name: \"{name}\", exact: {exact}, decl: &{name}::DECL, run: run_{name} }},"));
    }
    let _ = writeln!(
        out,
        "/// Every generated kernel.\npub static CASES: &[Case] = &[\n{}\n];",
        cases.join("\n")
    );
    let dir = std::env::var_os("OUT_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_default();
    if let Err(e) = std::fs::write(dir.join("kernels.rs"), out) {
        println!("cargo:warning=could not write kernels.rs: {e}");
        std::process::exit(1);
    }
}

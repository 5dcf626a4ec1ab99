//! What a compile targets: a cubin for `sm_XX`, or PTX for `compute_XX`, with NVRTC's `a`
//! (arch-specific) or `f` (family) suffix where it has one.
//!
//! [`Target::parse`] checks the spelling only (digits without a sign or a leading zero), so it
//! needs no NVRTC; [`Target::check_supported`] asks NVRTC whether it accepts the target: the arch
//! number must be one `nvrtcGetSupportedArchs` lists, and a suffixed target must be one NVRTC
//! compiles for (asked once per name, with an empty program).

use super::artifact::ImageKind;
use super::nvrtc;
use crate::error::{Error, Result};

/// The suffix of an arch name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum ArchVariant {
    /// `sm_90`: runs on its arch and, for PTX, later ones.
    #[default]
    Portable,
    /// `sm_90a`: arch-specific features; runs on exactly that arch.
    Specific,
    /// `sm_100f`: family-specific features; runs within the family.
    Family,
}

impl ArchVariant {
    fn suffix(self) -> &'static str {
        match self {
            ArchVariant::Portable => "",
            ArchVariant::Specific => "a",
            ArchVariant::Family => "f",
        }
    }
}

/// What NVRTC compiles for: an image kind and an arch (`sm_90`, `compute_90`, `sm_90a`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Target {
    /// Cubin (`sm_`) or PTX (`compute_`).
    pub kind: ImageKind,
    /// `90` for sm_90.
    pub arch: u32,
    /// Portable, arch-specific (`a`) or family (`f`).
    pub variant: ArchVariant,
}

impl Target {
    /// A cubin for `sm_<arch>`.
    pub const fn cubin(arch: u32) -> Target {
        Target {
            kind: ImageKind::Cubin,
            arch,
            variant: ArchVariant::Portable,
        }
    }

    /// PTX for `compute_<arch>`.
    pub const fn ptx(arch: u32) -> Target {
        Target {
            kind: ImageKind::Ptx,
            arch,
            variant: ArchVariant::Portable,
        }
    }

    /// Parses `sm_90` (cubin), `compute_90` (PTX), `sm_90a` or `sm_100f`: whether this NVRTC
    /// supports it is [`Target::check_supported`]'s question.
    pub fn parse(arch: &str) -> Result<Target> {
        let unknown = || {
            Error::InvalidArgument(format!(
                "unknown GPU arch '{arch}': expected sm_XX or compute_XX, optionally with an a or f suffix (sm_90, compute_90, sm_90a, sm_100f)"
            ))
        };
        let (kind, rest) = if let Some(n) = arch.strip_prefix("sm_") {
            (ImageKind::Cubin, n)
        } else if let Some(n) = arch.strip_prefix("compute_") {
            (ImageKind::Ptx, n)
        } else {
            return Err(unknown());
        };
        let (digits, variant) = match rest.as_bytes().last() {
            Some(b'a') => (&rest[..rest.len() - 1], ArchVariant::Specific),
            Some(b'f') => (&rest[..rest.len() - 1], ArchVariant::Family),
            _ => (rest, ArchVariant::Portable),
        };
        // Plain decimal digits, as NVRTC spells them: no sign, no leading zero, at most four.
        let plain = !digits.is_empty()
            && digits.len() <= 4
            && digits.bytes().all(|b| b.is_ascii_digit())
            && !digits.starts_with('0');
        let arch = digits.parse().ok().filter(|_| plain).ok_or_else(unknown)?;
        Ok(Target {
            kind,
            arch,
            variant,
        })
    }

    /// The target's name as NVRTC spells it: `sm_90`, `compute_80`, `sm_100f`.
    pub fn name(&self) -> String {
        let prefix = match self.kind {
            ImageKind::Cubin => "sm",
            ImageKind::Ptx => "compute",
        };
        format!("{prefix}_{}{}", self.arch, self.variant.suffix())
    }

    /// `Ok` when this NVRTC compiles for the target; `Error::NoCuda` when NVRTC is missing; else
    /// an error naming the archs it supports.
    pub fn check_supported(&self) -> Result<()> {
        let supported = nvrtc::supported_archs()?;
        let listed = i32::try_from(self.arch).is_ok_and(|a| supported.contains(&a));
        if listed && (self.variant == ArchVariant::Portable || nvrtc::accepts_arch(&self.name())?) {
            return Ok(());
        }
        let (major, minor) = nvrtc::version()?;
        let archs: Vec<String> = supported.iter().map(|a| a.to_string()).collect();
        Err(Error::InvalidArgument(format!(
            "GPU arch '{}' is not supported by NVRTC {major}.{minor}, which supports sm_XX and compute_XX for XX in {}{}",
            self.name(),
            archs.join(", "),
            if listed {
                " (the a and f suffixes only where NVRTC has them, such as sm_90a and sm_100f)"
            } else {
                ""
            }
        )))
    }

    /// The best target for a device of compute capability `cc` given the `sm_XX` numbers this
    /// NVRTC supports: the device's own cubin when supported; else PTX for the newest supported
    /// arch below it, which the driver JIT-compiles forward; else the device's own PTX.
    pub fn for_device(cc: (u32, u32), supported: &[i32]) -> Target {
        let want = cc.0 * 10 + cc.1;
        if supported.iter().any(|&a| a as u32 == want) {
            return Target::cubin(want);
        }
        let below = supported
            .iter()
            .map(|&a| a as u32)
            .filter(|&a| a < want)
            .max();
        Target::ptx(below.unwrap_or(want))
    }

    /// The compute capability whose device alias this target's image may serve: a portable
    /// cubin only (an `a` or `f` image is not what a launch on that device would compile).
    pub(crate) fn alias_cc(&self) -> Option<(u32, u32)> {
        (self.kind == ImageKind::Cubin && self.variant == ArchVariant::Portable)
            .then_some((self.arch / 10, self.arch % 10))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_parse_and_print() {
        assert_eq!(Target::parse("sm_90").ok(), Some(Target::cubin(90)));
        assert_eq!(Target::parse("compute_89").ok(), Some(Target::ptx(89)));
        for name in ["sm_90", "sm_90a", "compute_100f", "sm_121"] {
            assert_eq!(
                Target::parse(name).map(|t| t.name()).ok().as_deref(),
                Some(name)
            );
        }
        assert_eq!(
            Target::parse("sm_100f").map(|t| t.variant).ok(),
            Some(ArchVariant::Family)
        );
        for bad in [
            "gfx90a",
            "sm_x",
            "sm_",
            "sm_a",
            "sm_+90",
            "sm_090",
            "sm_0",
            "sm_-90",
            "sm_ 90",
            "sm_90b",
            "sm_90aa",
            "sm_4294967295",
            "compute_10000",
        ] {
            assert!(Target::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn device_targets_prefer_cubin_then_fall_back_to_ptx() {
        let supported = [75, 80, 86, 89, 90, 100, 120];
        assert_eq!(Target::for_device((9, 0), &supported), Target::cubin(90));
        // A device newer than this NVRTC knows: PTX of the newest arch below it.
        assert_eq!(Target::for_device((12, 1), &supported), Target::ptx(120));
        // Older than anything supported: its own PTX (NVRTC will say why if it cannot).
        assert_eq!(Target::for_device((5, 0), &supported), Target::ptx(50));
    }

    #[test]
    fn only_portable_cubins_serve_a_device_alias() {
        assert_eq!(Target::cubin(90).alias_cc(), Some((9, 0)));
        assert_eq!(Target::cubin(100).alias_cc(), Some((10, 0)));
        assert_eq!(Target::ptx(90).alias_cc(), None);
        assert_eq!(
            Target::parse("sm_90a").ok().and_then(|t| t.alias_cc()),
            None
        );
    }
}

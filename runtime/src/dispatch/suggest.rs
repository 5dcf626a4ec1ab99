/// The registered name closest to `wanted`, if one is close enough to be a likely typo.
pub(crate) fn closest<'a>(
    wanted: &str,
    candidates: impl Iterator<Item = &'a str>,
) -> Option<&'a str> {
    let limit = (wanted.len() / 3).max(2);
    candidates
        .map(|c| (strsim::damerau_levenshtein(wanted, c), c))
        .filter(|&(d, _)| d <= limit)
        .min()
        .map(|(_, c)| c)
}

#[cfg(test)]
mod tests {
    use super::closest;

    #[test]
    fn suggests_only_near_misses() {
        let names = ["mylib::axpby", "mylib::minmax", "other::scale_"];
        assert_eq!(
            closest("mylib::axbpy", names.into_iter()),
            Some("mylib::axpby")
        );
        assert_eq!(
            closest("mylib::minmx", names.into_iter()),
            Some("mylib::minmax")
        );
        assert_eq!(closest("totally::different", names.into_iter()), None);
    }
}

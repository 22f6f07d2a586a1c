//! Small text helpers for messages built from a tool's output.

/// The last line of `text` that is not blank, trimmed (`""` when there is none): what a
/// traceback or a tool's output ends with, for a one-line message.
#[must_use]
pub fn last_line(text: &str) -> &str {
    text.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("").trim()
}

/// `text` cut to at most `max` characters, with an ellipsis where it was cut.
#[must_use]
pub fn clip(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_string()
    } else {
        text.chars().take(max).collect::<String>() + "…"
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_last_non_blank_line_trimmed() {
        assert_eq!(super::last_line("Traceback\n  x\nValueError: bad  \n\n  \n"), "ValueError: bad");
        assert_eq!(super::last_line(" \n"), "");
    }
}

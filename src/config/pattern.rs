//! A regular expression of the configuration (`url.rewrite-*`,
//! `url.redirect`, `dir-listing.exclude`), compiled once when the file is
//! read: a request matches it and never compiles it again.

use std::ops::Deref;

use regex::Regex;

/// A compiled pattern; it compares and prints as its text.
#[derive(Clone, Debug)]
pub struct Pattern(Regex);

impl Pattern {
    pub fn new(text: &str) -> Result<Pattern, String> {
        Regex::new(text)
            .map(Pattern)
            .map_err(|e| format!("invalid regex \"{text}\": {e}"))
    }

    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }
}

impl Deref for Pattern {
    type Target = Regex;
    fn deref(&self) -> &Regex {
        &self.0
    }
}

impl AsRef<str> for Pattern {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl PartialEq for Pattern {
    fn eq(&self, other: &Pattern) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for Pattern {}

impl PartialEq<&str> for Pattern {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

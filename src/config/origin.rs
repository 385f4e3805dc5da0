//! Where a value was set in the configuration files.

/// Where a value was set: shown in start-up errors ("set at glint.conf:12").
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Origin {
    pub file: String,
    pub line: u32,
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.file, self.line)
    }
}

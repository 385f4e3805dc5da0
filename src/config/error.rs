//! The error of loading a configuration.

use std::fmt;

/// A configuration error: where it is and what is wrong.
///
/// Displays as `file:line:col: message`; errors with no position in a file
/// (the main file cannot be read) display as `file: message`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    pub file: String,
    /// 1-based; 0 when the error has no position.
    pub line: u32,
    /// 1-based column in characters; 0 when the error has no position.
    pub col: u32,
    pub message: String,
}

impl ConfigError {
    /// An error at `file:line:col`.
    pub fn at(file: &str, line: u32, col: u32, message: impl Into<String>) -> ConfigError {
        ConfigError {
            file: file.to_string(),
            line,
            col,
            message: message.into(),
        }
    }

    /// An error about a whole file.
    pub fn file(file: &str, message: impl Into<String>) -> ConfigError {
        ConfigError::at(file, 0, 0, message)
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}: {}", self.file, self.message)
        } else {
            write!(
                f,
                "{}:{}:{}: {}",
                self.file, self.line, self.col, self.message
            )
        }
    }
}

impl std::error::Error for ConfigError {}

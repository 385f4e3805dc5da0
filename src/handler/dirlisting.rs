//! mod_dirlisting: an HTML index of a directory without an index file.

use std::fmt::Write as _;
use std::os::unix::fs::MetadataExt;

use crate::config::Settings;
use crate::date::utc_parts;

/// Most entries listed; a larger directory is cut off with a note, so one
/// request cannot make glint build an unbounded page.
pub const MAX_ENTRIES: usize = 10_000;

struct Item {
    name: String,
    dir: bool,
    size: u64,
    mtime: i64,
}

/// Builds the listing of `fs_dir` shown at `url_path` (which ends in `/`).
pub fn render(fs_dir: &str, url_path: &str, s: &Settings) -> std::io::Result<Vec<u8>> {
    let mut items = Vec::new();
    let mut truncated = false;
    // `dir-listing.exclude`: checked when the configuration was loaded.
    let exclude: Vec<regex::Regex> = s
        .dir_listing_exclude
        .iter()
        .filter_map(|re| regex::Regex::new(re).ok())
        .collect();
    for entry in std::fs::read_dir(fs_dir)? {
        let Ok(entry) = entry else { continue };
        let name = entry.file_name().to_string_lossy().into_owned();
        if s.dir_listing_hide_dotfiles && name.starts_with('.') {
            continue;
        }
        if (s.dir_listing_hide_readme_file && name == "README.txt")
            || (s.dir_listing_hide_header_file && name == "HEADER.txt")
            || exclude.iter().any(|re| re.is_match(&name))
        {
            continue;
        }
        let Ok(meta) = entry.metadata() else { continue };
        if items.len() == MAX_ENTRIES {
            truncated = true;
            break;
        }
        items.push(Item {
            name,
            dir: meta.is_dir(),
            size: meta.size(),
            mtime: meta.mtime(),
        });
    }
    items.sort_by(|a, b| b.dir.cmp(&a.dir).then_with(|| a.name.cmp(&b.name)));

    let title = html_escape(url_path);
    let mut out = String::with_capacity(1024 + items.len() * 160);
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html>\n<head>\n<meta charset=\"utf-8\">\n<title>Index of {title}</title>\n\
         <style>table{{border-collapse:collapse}}td,th{{padding:0 1em;text-align:left}}td.s{{text-align:right}}</style>\n\
         </head>\n<body>\n<h2>Index of {title}</h2>\n<table>\n\
         <tr><th>Name</th><th>Last Modified</th><th>Size</th></tr>\n"
    );
    if url_path != "/" {
        out.push_str("<tr><td><a href=\"../\">Parent Directory</a>/</td><td></td><td class=\"s\">-</td></tr>\n");
    }
    for it in &items {
        let href = url_escape(&it.name);
        let name = html_escape(&it.name);
        let slash = if it.dir { "/" } else { "" };
        let (y, mo, d, h, mi, sec, _) = utc_parts(it.mtime);
        let size = if it.dir {
            "-".to_string()
        } else {
            human_size(it.size)
        };
        let _ = writeln!(
            out,
            "<tr><td><a href=\"{href}{slash}\">{name}</a>{slash}</td>\
             <td>{y:04}-{mo:02}-{d:02} {h:02}:{mi:02}:{sec:02}</td><td class=\"s\">{size}</td></tr>"
        );
    }
    out.push_str("</table>\n");
    if truncated {
        let _ = writeln!(
            out,
            "<p>Only the first {MAX_ENTRIES} entries are shown.</p>"
        );
    }
    out.push_str("</body>\n</html>\n");
    Ok(out.into_bytes())
}

fn human_size(n: u64) -> String {
    const UNITS: [&str; 5] = ["", "K", "M", "G", "T"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{n}")
    } else {
        format!("{v:.1}{}", UNITS[u])
    }
}

/// Escapes text for HTML content and attribute values.
pub fn html_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Percent-encodes a file name for use as a relative URL.
fn url_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:@".contains(&b) {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_sorted_and_escaped() {
        let dir = std::env::temp_dir().join(format!("glint-dirlist-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        std::fs::write(dir.join("b.txt"), b"12345").unwrap();
        std::fs::write(dir.join("a <x>.html"), b"").unwrap();
        std::fs::write(dir.join(".hidden"), b"").unwrap();
        let s = Settings::default();
        let page = String::from_utf8(render(dir.to_str().unwrap(), "/d/", &s).unwrap()).unwrap();
        let sub = page.find("href=\"sub/\"").unwrap();
        let a = page.find("href=\"a%20%3Cx%3E.html\"").unwrap();
        let b = page.find("href=\"b.txt\"").unwrap();
        assert!(sub < a && a < b, "directories first, then by name:\n{page}");
        assert!(page.contains("a &lt;x&gt;.html"), "{page}");
        assert!(!page.contains(".hidden"), "{page}");
        assert!(page.contains("Parent Directory"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn sizes() {
        assert_eq!(human_size(469), "469");
        assert_eq!(human_size(25_600), "25.0K");
        assert_eq!(human_size(5 << 30), "5.0G");
    }
}

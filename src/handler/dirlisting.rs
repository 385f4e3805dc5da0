//! mod_dirlisting: an HTML index of a directory without an index file.

use std::fmt::Write as _;
use std::os::unix::fs::MetadataExt;

use crate::config::Settings;
use crate::date::utc_parts;
use crate::syntax;

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
    let (items, truncated) = read_items(fs_dir, s)?;
    let mut out = String::with_capacity(2048 + items.len() * 200);
    write_head(&mut out, fs_dir, url_path, s);
    write_rows(&mut out, &items, url_path, s);
    write_foot(&mut out, fs_dir, truncated, s);
    Ok(out.into_bytes())
}

/// The entries of `fs_dir` to list, directories first, by name; and
/// whether there were more than [`MAX_ENTRIES`].
fn read_items(fs_dir: &str, s: &Settings) -> std::io::Result<(Vec<Item>, bool)> {
    let mut items = Vec::new();
    let mut truncated = false;
    // `dir-listing.exclude`: compiled when the configuration was loaded.
    let exclude = &s.dir_listing.exclude;
    for entry in std::fs::read_dir(fs_dir)? {
        let Ok(entry) = entry else { continue };
        let name = entry.file_name().to_string_lossy().into_owned();
        if s.dir_listing.hide_dotfiles && name.starts_with('.') {
            continue;
        }
        if (s.dir_listing.hide_readme_file && name == "README.txt")
            || (s.dir_listing.hide_header_file && name == "HEADER.txt")
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
    Ok((items, truncated))
}

/// The page's head, its title and `dir-listing.show-header`'s file.
fn write_head(out: &mut String, fs_dir: &str, url_path: &str, s: &Settings) {
    let title = html_escape(url_path);
    let charset = html_escape(s.dir_listing.encoding.as_deref().unwrap_or("utf-8"));
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html>\n<head>\n<meta charset=\"{charset}\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>Index of {title}</title>\n"
    );
    match s.dir_listing.external_css.as_deref() {
        Some(css) => {
            let _ = writeln!(
                out,
                "<link rel=\"stylesheet\" type=\"text/css\" href=\"{}\">",
                html_escape(css)
            );
        }
        None if s.dir_listing.auto_layout => out.push_str(STYLE),
        None => {}
    }
    let _ = write!(out, "</head>\n<body>\n<h2>Index of {title}</h2>\n");
    if let Some(name) = s.dir_listing.show_header.as_deref() {
        shown_file(out, fs_dir, name, s.dir_listing.encode_header, "header");
    }
}

/// The table: the parent directory (below `/`), then one row per entry.
fn write_rows(out: &mut String, items: &[Item], url_path: &str, s: &Settings) {
    out.push_str(
        "<div class=\"list\">\n<table id=\"listing\">\n<thead><tr>\
         <th class=\"n\">Name</th><th class=\"m\">Last Modified</th>\
         <th class=\"s\">Size</th><th class=\"t\">Type</th></tr></thead>\n<tbody>\n",
    );
    if url_path != "/" {
        out.push_str(
            "<tr class=\"d\"><td class=\"n\"><a href=\"../\">..</a>/</td>\
             <td class=\"m\"></td><td class=\"s\">-</td><td class=\"t\">Directory</td></tr>\n",
        );
    }
    for it in items {
        let mut href = String::with_capacity(it.name.len());
        syntax::percent_encode(it.name.as_bytes(), &syntax::SEGMENT, &mut href);
        let name = html_escape(&it.name);
        let slash = if it.dir { "/" } else { "" };
        let (y, mo, d, h, mi, sec, _) = utc_parts(it.mtime);
        let (size, kind) = if it.dir {
            ("-".to_string(), "Directory".to_string())
        } else {
            let (t, _) = super::mime::content_type(&it.name, s);
            (human_size(it.size), html_escape(t))
        };
        let class = if it.dir { "d" } else { "f" };
        let _ = writeln!(
            out,
            "<tr class=\"{class}\"><td class=\"n\"><a href=\"{href}{slash}\">{name}</a>{slash}</td>\
             <td class=\"m\" data-t=\"{}\">{y:04}-{mo:02}-{d:02} {h:02}:{mi:02}:{sec:02}</td>\
             <td class=\"s\" data-b=\"{}\">{size}</td><td class=\"t\">{kind}</td></tr>",
            it.mtime,
            if it.dir { 0 } else { it.size }
        );
    }
    out.push_str("</tbody>\n</table>\n</div>\n");
}

/// After the table: the cut-off note, `dir-listing.show-readme`'s file,
/// the footer and the script.
fn write_foot(out: &mut String, fs_dir: &str, truncated: bool, s: &Settings) {
    if truncated {
        let _ = writeln!(
            out,
            "<p>Only the first {MAX_ENTRIES} entries are shown.</p>"
        );
    }
    if let Some(name) = s.dir_listing.show_readme.as_deref() {
        shown_file(out, fs_dir, name, s.dir_listing.encode_readme, "readme");
    }
    let footer = s
        .dir_listing
        .set_footer
        .as_deref()
        .unwrap_or(&s.identity.tag);
    if !footer.is_empty() {
        let _ = writeln!(out, "<div class=\"foot\">{}</div>", html_escape(footer));
    }
    match s.dir_listing.external_js.as_deref() {
        Some(js) => {
            let _ = writeln!(
                out,
                "<script type=\"text/javascript\" src=\"{}\"></script>",
                html_escape(js)
            );
        }
        None if s.dir_listing.auto_layout && s.dir_listing.external_css.is_none() => {
            out.push_str(SCRIPT)
        }
        None => {}
    }
    out.push_str("</body>\n</html>\n");
}

/// The built-in look: readable on a phone and a wide screen alike.
const STYLE: &str = "<style>\n\
body{font-family:system-ui,-apple-system,\"Segoe UI\",sans-serif;margin:1.5em;color:#222;background:#fff}\n\
h2{font-weight:600;word-break:break-all}\n\
div.list{overflow-x:auto}\n\
table{border-collapse:collapse;min-width:60%}\n\
th,td{padding:.25em .9em;text-align:left;white-space:nowrap}\n\
th{border-bottom:2px solid #ccc;cursor:pointer;user-select:none}\n\
tbody tr:nth-child(even){background:#f5f5f5}\n\
tbody tr:hover{background:#e8f0fe}\n\
td.n{white-space:normal;word-break:break-all}\n\
td.s,th.s{text-align:right}\n\
td.t,td.m{color:#555}\n\
a{color:#0645ad;text-decoration:none}a:hover{text-decoration:underline}\n\
tr.d a{font-weight:600}\n\
pre{background:#f8f8f8;padding:.8em;overflow-x:auto}\n\
div.foot{margin-top:1.5em;color:#777;font-size:.85em}\n\
@media (prefers-color-scheme:dark){body{color:#ddd;background:#181818}\
tbody tr:nth-child(even){background:#222}tbody tr:hover{background:#2a3240}\
a{color:#8ab4f8}pre{background:#222}td.t,td.m{color:#aaa}}\n\
</style>\n";

/// Sorts the table by a column when its heading is clicked (directories
/// stay first); the page works without it.
const SCRIPT: &str = "<script>\n\
(function(){var t=document.getElementById('listing');if(!t||!t.tHead)return;\
var b=t.tBodies[0],dir=[1,1,1,1];\
function key(r,c){var d=r.cells[c];if(c==1)return +d.getAttribute('data-t');\
if(c==2)return +d.getAttribute('data-b');return d.textContent.toLowerCase();}\
function sort(c){var up=dir[c]=-dir[c],rows=[].slice.call(b.rows),top=null;\
if(rows.length&&rows[0].cells[0].textContent=='../')top=rows.shift();\
rows.sort(function(x,y){var dx=x.className=='d',dy=y.className=='d';if(dx!=dy)return dx?-1:1;\
var a=key(x,c),z=key(y,c);return a<z?up:a>z?-up:0;});\
if(top)rows.unshift(top);rows.forEach(function(r){b.appendChild(r);});}\
[].forEach.call(t.tHead.rows[0].cells,function(h,i){h.onclick=function(){sort(i);};});})();\n\
</script>\n";

/// Most bytes of a header or readme file shown in a listing.
const MAX_SHOWN: u64 = 64 * 1024;

/// `dir-listing.show-header` / `show-readme`: the file `name` of the
/// directory, as text in `<pre>` (`encode`) or as it is (HTML); nothing
/// when it is missing, not a file, or larger than [`MAX_SHOWN`].
fn shown_file(out: &mut String, fs_dir: &str, name: &str, encode: bool, class: &str) {
    let path = format!("{}/{name}", fs_dir.trim_end_matches('/'));
    let Ok(meta) = std::fs::metadata(&path) else {
        return;
    };
    if !meta.is_file() || meta.len() > MAX_SHOWN {
        return;
    }
    let Ok(bytes) = std::fs::read(&path) else {
        return;
    };
    let text = String::from_utf8_lossy(&bytes);
    if encode {
        let _ = writeln!(out, "<pre class=\"{class}\">{}</pre>", html_escape(&text));
    } else {
        let _ = writeln!(out, "<div class=\"{class}\">{text}</div>");
    }
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
        assert!(page.contains("href=\"../\""));
        assert!(page.contains("<style>"), "the built-in look");
        assert!(page.contains("glint/"), "the footer is the server tag");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn options_change_the_page() {
        let dir = std::env::temp_dir().join(format!("glint-dirlist-o-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("README.txt"), b"read <me>").unwrap();
        std::fs::write(dir.join("HEADER.txt"), b"<b>head</b>").unwrap();
        let s = Settings {
            dir_listing: crate::config::DirListing {
                encoding: Some("iso-8859-1".into()),
                external_css: Some("/s.css".into()),
                external_js: Some("/s.js".into()),
                show_readme: Some("README.txt".into()),
                show_header: Some("HEADER.txt".into()),
                encode_header: false,
                set_footer: Some("my <footer>".into()),
                ..Settings::default().dir_listing
            },
            ..Settings::default()
        };
        let page = String::from_utf8(render(dir.to_str().unwrap(), "/", &s).unwrap()).unwrap();
        for want in [
            "charset=\"iso-8859-1\"",
            "href=\"/s.css\"",
            "src=\"/s.js\"",
            "<pre class=\"readme\">read &lt;me&gt;</pre>",
            "<div class=\"header\"><b>head</b></div>",
            "my &lt;footer&gt;",
        ] {
            assert!(page.contains(want), "{want}:\n{page}");
        }
        assert!(
            !page.contains("<style>"),
            "an external stylesheet replaces the built-in one"
        );
        assert!(!page.contains("..</a>"), "no parent at the root");
        let bare = Settings {
            dir_listing: crate::config::DirListing {
                auto_layout: false,
                ..Settings::default().dir_listing
            },
            ..Settings::default()
        };
        let page = String::from_utf8(render(dir.to_str().unwrap(), "/x/", &bare).unwrap()).unwrap();
        assert!(
            !page.contains("<style>") && !page.contains("<script>"),
            "{page}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn sizes() {
        assert_eq!(human_size(469), "469");
        assert_eq!(human_size(25_600), "25.0K");
        assert_eq!(human_size(5 << 30), "5.0G");
    }
}

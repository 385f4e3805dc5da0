use super::answer::boundary;
use super::content_type;
use super::validators::{etag_matches, etag_tag};
use crate::config::Settings;

#[test]
fn etag_lists() {
    let tag: &[u8] = b"\"abc\"";
    let cases: &[(&str, &[u8], bool, bool)] = &[
        ("exact", b"\"abc\"", false, true),
        ("in a list", b"\"x\", \"abc\"", false, true),
        ("star", b"*", false, true),
        ("weak, weak comparison", b"W/\"abc\"", true, true),
        ("weak, strong comparison", b"W/\"abc\"", false, false),
        ("other", b"\"abd\"", true, false),
        ("unquoted", b"abc", true, false),
    ];
    for (what, list, weak, want) in cases {
        assert_eq!(etag_matches(list, Some(tag), *weak), *want, "{what}");
    }
    assert!(!etag_matches(b"*", None, true), "star without a tag");
}

#[test]
fn etags_and_boundaries_keep_their_values() {
    // Sent tags are remembered by caches: the hash must never change.
    assert_eq!(&etag_tag(&[1, 2, 3, 4, 5]), b"\"a73c4fcedb1fd5a4\"");
    assert_eq!(boundary(Some(b"\"abc\""), 100), b"glint-215f2bd8998e5f0f");
}

#[test]
fn mime_types() {
    let mut s = Settings::default();
    let cases = [
        ("/index.html", ("text/html", true)),
        ("/test.jpg", ("image/jpeg", false)),
        ("/style.css", ("text/css", true)),
        ("/noext", ("application/octet-stream", false)),
        ("/dir.d/noext", ("application/octet-stream", false)),
    ];
    for (p, want) in cases {
        assert_eq!(content_type(p, &s), want, "{p}");
    }
    s.files.mimetype_assign = vec![
        (".html".into(), "text/x-custom".into()),
        (".tar.gz".into(), "application/x-tgz".into()),
        (".gz".into(), "application/gzip".into()),
    ];
    assert_eq!(content_type("/a.html", &s), ("text/x-custom", false));
    assert_eq!(content_type("/a.tar.gz", &s), ("application/x-tgz", false));
}

#[test]
fn a_new_configuration_never_meets_the_old_ones_cached_answers() {
    // The index cache is keyed by the settings' stamp: settings built after
    // a reload at the very address of the old ones (a Box freed and
    // allocated again, as the allocator likes to) must not be served what
    // was found under the old ones.
    let dir = std::env::temp_dir().join(format!("glint-stamp-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let _ = std::fs::write(dir.join("index.html"), b"x");
    let root = dir.display().to_string();
    let mut cache = super::FileCache::default();
    let mut out = String::new();
    let mut old = Box::new(Settings::default());
    old.files.index_file_names = vec!["index.html".into()];
    let old_addr = &*old as *const Settings as usize;
    let found = super::find_index(&root, "/", "/", &old, &mut cache, 1, &mut out);
    assert!(found && out == "/index.html", "{found} {out:?}");
    drop(old);
    let mut new = Box::new(Settings::default());
    new.files.index_file_names = vec!["default.htm".into()];
    let reused = &*new as *const Settings as usize == old_addr;
    let found = super::find_index(&root, "/", "/", &new, &mut cache, 1, &mut out);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        !found,
        "answered {out:?} from the old settings (address reused: {reused})"
    );
}

#[test]
fn the_last_hit_is_always_what_the_cache_holds() {
    use super::cache::OpenFile;
    use std::rc::Rc;
    let dir = std::env::temp_dir().join(format!("glint-lasthit-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let path = dir.join("a.html");
    let p = path.display().to_string();
    let s = Settings::default();
    let open = |content: &[u8], now: u64| {
        std::fs::write(&path, content).expect("write");
        let f = std::fs::File::open(&path).expect("open");
        let meta = f.metadata().expect("fstat");
        Rc::new(OpenFile::new(f, &meta, &p, &s, (7, now), super::SMALL_FILE))
    };
    let mut cache = super::FileCache::default();
    assert!(cache.get(&p, 7, 1).is_none(), "empty");
    cache.insert(&p, open(b"one", 1));
    let first = cache.get(&p, 7, 1).expect("cached");
    assert_eq!(first.len, 3);
    assert!(cache.get(&p, 7, 1).is_some(), "the last hit again");
    assert!(cache.get(&p, 8, 1).is_none(), "other settings: not served");
    assert!(
        cache.get(&p, 7, 3).is_none(),
        "older than a second: not served"
    );
    // Replaced under the same path: the new entry, not the last hit.
    cache.insert(&p, open(b"second", 2));
    let second = cache.get(&p, 7, 2).expect("cached");
    assert_eq!(second.len, 6);
    assert!(!Rc::ptr_eq(&first, &second));
    // Purged: gone, though it was the last hit.
    cache.purge(10);
    assert!(cache.get(&p, 7, 10).is_none(), "purged");
    cache.insert(&p, open(b"third!!", 10));
    assert_eq!(cache.get(&p, 7, 10).map(|e| e.len), Some(7));
    cache.clear();
    assert!(cache.get(&p, 7, 10).is_none(), "cleared");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn files_up_to_copy_file_are_in_memory_only_where_bytes_are_copied() {
    use super::cache::OpenFile;
    use super::{COPY_FILE, SMALL_FILE};
    let dir = std::env::temp_dir().join(format!("glint-copyfile-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let s = Settings::default();
    let open = |name: &str, len: usize, keep: u64| {
        let path = dir.join(name);
        let content: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
        std::fs::write(&path, &content).expect("write");
        let f = std::fs::File::open(&path).expect("open");
        let meta = f.metadata().expect("fstat");
        let of = OpenFile::new(f, &meta, &path.display().to_string(), &s, (7, 1), keep);
        (of, content)
    };
    // A small file: from memory for every connection, whoever opened it.
    let (of, c) = open("small", SMALL_FILE as usize, SMALL_FILE);
    assert_eq!(of.in_memory(false).map(|b| &b[..]), Some(&c[..]));
    assert_eq!(of.in_memory(true).map(|b| &b[..]), Some(&c[..]));
    // 25,000 bytes opened for a copying connection: in memory for it and
    // its like, by sendfile for a plain HTTP/1 connection.
    let (of, c) = open("mid", 25_000, COPY_FILE);
    assert_eq!(of.in_memory(true).map(|b| &b[..]), Some(&c[..]));
    assert!(of.in_memory(false).is_none());
    // Opened for plain HTTP/1: not read at all.
    let (of, _) = open("mid2", 25_000, SMALL_FILE);
    assert!(of.in_memory(true).is_none() && of.in_memory(false).is_none());
    // Above COPY_FILE: never in memory.
    let (of, _) = open("large", COPY_FILE as usize + 1, COPY_FILE);
    assert!(of.in_memory(true).is_none());
    let _ = std::fs::remove_dir_all(&dir);
}

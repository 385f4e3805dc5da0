//! The cache dir: names, atomic writes under racing writers, stale copies,
//! the sweeper; the worker pool's bounds; precompressed siblings.

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant, SystemTime};

use super::cache::*;
use super::pool::{Job, JobError, Pool, Refused, SourceId};
use super::precompressed;
use super::tests_encoder::{decode, text};
use super::*;

/// A fresh directory per test under the system temp dir.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("glint-compress-{name}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    dir
}

/// An ETag the way the static handler makes one: hex over the file's identity.
fn etag_of(meta: &fs::Metadata) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for v in [
        meta.ino(),
        meta.len(),
        meta.mtime() as u64,
        meta.mtime_nsec() as u64,
    ] {
        h = (h ^ v).wrapping_mul(0x100_0000_01b3);
    }
    format!("\"{h:016x}\"")
}

fn job_for(source: &Path, cache: &Path, coding: Coding) -> Job {
    let meta = fs::metadata(source).unwrap();
    let variant = negotiate::variant_etag(&etag_of(&meta), coding).unwrap();
    Job {
        source: source.to_path_buf(),
        expect: SourceId::of(&meta),
        dest: cache_path(cache.to_str().unwrap(), source, &variant).unwrap(),
        coding,
        params: DeflateSpec::default().encoder_params(),
        packed: None,
        content_type: Some("text/css".into()),
    }
}

#[test]
fn cache_names_are_lighttpds_and_safe() {
    let p = cache_path("/var/cache/c", Path::new("/var/www/a.css"), "\"3f2a-gzip\"");
    assert_eq!(
        p.as_deref(),
        Some(Path::new("/var/cache/c/var/www/a.css-3f2a-gzip"))
    );
    let refused: &[(&str, &str)] = &[
        ("/var/www/a.css", "W/\"3f2a-gzip\""),
        ("/var/www/a.css", "\"3f/../x-gzip\""),
        ("/var/www/a.css", "\"\""),
        ("/var/www/../etc/passwd", "\"1-gzip\""),
        ("relative/a.css", "\"1-gzip\""),
        ("/", "\"1-gzip\""),
    ];
    for (path, tag) in refused {
        assert_eq!(cache_path("/c", Path::new(path), tag), None, "{path} {tag}");
    }
    type Parsed<'a> = Option<(&'a str, &'a str, Coding)>;
    let names: &[(&str, Parsed)] = &[
        ("a.css-3f2a-gzip", Some(("a.css", "3f2a", Coding::Gzip))),
        ("a.css-3f2a-x-gzip", Some(("a.css", "3f2a", Coding::XGzip))),
        ("a-b.css-3f2a-br", Some(("a-b.css", "3f2a", Coding::Br))),
        ("a.css-3f2a-zstd", Some(("a.css", "3f2a", Coding::Zstd))),
        ("a.css-3f2a-deflate.123.4", None),
        ("a.css-gzip", None),
        ("a.css-3f.2a-gzip", None),
        ("-3f2a-gzip", None),
    ];
    for (name, want) in names {
        let got = parse_cache_name(name.as_bytes()).map(|(s, t, c)| {
            (
                String::from_utf8(s.to_vec()).unwrap(),
                String::from_utf8(t.to_vec()).unwrap(),
                c,
            )
        });
        let want = want.map(|(s, t, c)| (s.to_string(), t.to_string(), c));
        assert_eq!(got, want, "{name}");
    }
}

#[test]
fn write_atomic_modes_and_failure() {
    let dir = scratch("atomic");
    let dest = dir.join("cache/var/www/a.css-1f-gzip");
    let n = write_atomic(&dest, |f| std::io::Write::write_all(f, b"hello")).unwrap();
    assert_eq!((n, fs::read(&dest).unwrap()), (5, b"hello".to_vec()));
    assert_eq!(
        fs::metadata(&dest).unwrap().permissions().mode() & 0o777,
        0o600
    );
    assert_eq!(
        fs::metadata(dest.parent().unwrap())
            .unwrap()
            .permissions()
            .mode()
            & 0o777,
        0o700
    );
    let failed = write_atomic(&dest, |f| {
        std::io::Write::write_all(f, b"half")?;
        Err(std::io::Error::other("disk full"))
    });
    assert!(failed.is_err());
    assert_eq!(fs::read(&dest).unwrap(), b"hello", "the old copy stands");
    let left: Vec<_> = fs::read_dir(dest.parent().unwrap()).unwrap().collect();
    assert_eq!(left.len(), 1, "no temporary file left behind");
    prepare_cache_dir(dir.join("made/here").to_str().unwrap()).unwrap();
    assert!(dir.join("made/here").is_dir());
    let file = dir.join("plain");
    fs::write(&file, b"").unwrap();
    let e = prepare_cache_dir(file.join("sub").to_str().unwrap()).unwrap_err();
    assert!(e.starts_with("deflate.cache-dir: "), "{e}");
    fs::remove_dir_all(&dir).unwrap();
}

/// Writers racing on one name, a reader polling it: the reader only ever
/// sees a complete stream, and the temporary names all go.
#[test]
fn racing_writers_never_leave_a_torn_file() {
    let dir = scratch("race");
    let dest = Arc::new(dir.join("site/page.html-ab12-gzip"));
    let bodies: Vec<Vec<u8>> = (0..6).map(|i| text(300_000, i)).collect();
    let gz: Arc<Vec<Vec<u8>>> = Arc::new(
        bodies
            .iter()
            .map(|b| {
                let mut e = Encoder::new(
                    Coding::Gzip,
                    &DeflateSpec::default().encoder_params(),
                    None,
                    None,
                )
                .unwrap();
                let mut out = Vec::new();
                let mut rest = &b[..];
                while !rest.is_empty() {
                    rest = &rest[e.feed(rest, &mut out).unwrap()..];
                }
                while e.finish(&mut out).unwrap() == Progress::More {}
                out
            })
            .collect(),
    );
    let start = Arc::new(Barrier::new(gz.len() + 1));
    let writers: Vec<_> = (0..gz.len())
        .map(|i| {
            let (dest, gz, start) = (Arc::clone(&dest), Arc::clone(&gz), Arc::clone(&start));
            std::thread::spawn(move || {
                start.wait();
                for _ in 0..5 {
                    // Written in 4 KiB pieces so a torn read would be likely.
                    write_atomic(&dest, |f| {
                        gz[i]
                            .chunks(4096)
                            .try_for_each(|c| std::io::Write::write_all(f, c))
                    })
                    .unwrap();
                }
            })
        })
        .collect();
    start.wait();
    let mut seen = 0;
    let deadline = Instant::now() + Duration::from_secs(20);
    while writers.iter().any(|w| !w.is_finished()) && Instant::now() < deadline {
        if let Ok(data) = fs::read(&*dest) {
            let body = decode(Coding::Gzip, &data);
            assert!(
                bodies.contains(&body),
                "a torn or mixed file of {} bytes",
                data.len()
            );
            seen += 1;
        }
    }
    for w in writers {
        w.join().unwrap();
    }
    assert!(seen > 0, "the reader saw the file at least once");
    assert!(bodies.contains(&decode(Coding::Gzip, &fs::read(&*dest).unwrap())));
    let names: Vec<_> = fs::read_dir(dest.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 1, "temporary names left: {names:?}");
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_replaced_source_gets_a_new_name_and_the_old_copy_goes() {
    let dir = scratch("replace");
    let (site, cache) = (dir.join("site"), dir.join("cache"));
    fs::create_dir_all(&site).unwrap();
    let src = site.join("a.css");
    fs::write(&src, text(50_000, 7)).unwrap();
    // A sibling source whose name extends a.css's: its copies must survive.
    let other = site.join("a.css-foo.css");
    fs::write(&other, text(5_000, 8)).unwrap();
    let other_job = job_for(&other, &cache, Coding::Gzip);
    pool::run(&other_job).unwrap();

    let first = job_for(&src, &cache, Coding::Gzip);
    let first_br = job_for(&src, &cache, Coding::Br);
    pool::run(&first).unwrap();
    pool::run(&first_br).unwrap();
    assert_eq!(
        decode(Coding::Gzip, &fs::read(&first.dest).unwrap()),
        fs::read(&src).unwrap()
    );

    // Replace the file as an editor or rsync does: a new inode renamed in.
    let tmp = site.join(".a.css.new");
    fs::write(&tmp, text(60_000, 9)).unwrap();
    fs::rename(&tmp, &src).unwrap();
    let second = job_for(&src, &cache, Coding::Gzip);
    assert_ne!(second.dest, first.dest, "a new ETag is a new name");
    assert!(
        matches!(pool::run(&first), Err(JobError::SourceChanged)),
        "the old job refuses the new file"
    );
    pool::run(&second).unwrap();
    assert_eq!(
        decode(Coding::Gzip, &fs::read(&second.dest).unwrap()),
        fs::read(&src).unwrap()
    );
    assert!(
        !first.dest.exists() && !first_br.dest.exists(),
        "older ETag's copies removed"
    );
    assert!(other_job.dest.exists(), "another source's copy kept");
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_sweeper_removes_what_is_stale_in_bounded_steps() {
    let dir = scratch("sweep");
    let (site, cache) = (dir.join("site"), dir.join("cache"));
    fs::create_dir_all(site.join("sub")).unwrap();
    let live = site.join("live.js");
    fs::write(&live, text(3000, 1)).unwrap();
    let gone = site.join("sub/gone.js");
    fs::write(&gone, text(3000, 2)).unwrap();
    let (live_job, gone_job) = (
        job_for(&live, &cache, Coding::Zstd),
        job_for(&gone, &cache, Coding::Br),
    );
    pool::run(&live_job).unwrap();
    pool::run(&gone_job).unwrap();
    fs::remove_file(&gone).unwrap();
    let stale = live_job.dest.with_file_name("live.js-00ff-zstd");
    fs::copy(&live_job.dest, &stale).unwrap();
    let old_tmp = live_job.dest.with_file_name("live.js-00ff-zstd.123.4");
    let new_tmp = live_job.dest.with_file_name("live.js-00ee-zstd.123.5");
    for t in [&old_tmp, &new_tmp] {
        fs::write(t, b"partial").unwrap();
    }
    let two_hours_ago = SystemTime::now() - Duration::from_secs(7200);
    fs::File::options()
        .write(true)
        .open(&old_tmp)
        .unwrap()
        .set_modified(two_hours_ago)
        .unwrap();
    let link = live_job.dest.with_file_name("link-00aa-gzip");
    std::os::unix::fs::symlink(&live, &link).unwrap();

    let mut sweeper = Sweeper::new(cache.to_str().unwrap());
    let current = |p: &Path, m: &fs::Metadata| {
        assert!(
            p.starts_with(&site),
            "source path {p:?} rebuilt from the cache name"
        );
        Some(etag_of(m))
    };
    let mut total = SweepReport::default();
    for _ in 0..100 {
        let r = sweeper.step(2, SystemTime::now(), &current);
        assert!(r.examined <= 2, "bounded step: {r:?}");
        total.removed += r.removed;
        if r.round_done {
            break;
        }
    }
    assert_eq!(total.removed, 3, "stale ETag, missing source, old temp");
    assert!(live_job.dest.exists() && new_tmp.exists());
    assert!(!gone_job.dest.exists() && !stale.exists() && !old_tmp.exists());
    assert!(
        fs::symlink_metadata(&link).is_ok() && live.exists(),
        "symlinks are left alone"
    );
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_pool_refuses_when_full_and_dedups() {
    let dir = scratch("pool");
    let (site, cache) = (dir.join("site"), dir.join("cache"));
    fs::create_dir_all(&site).unwrap();
    let files: Vec<PathBuf> = (0..4)
        .map(|i| {
            let p = site.join(format!("f{i}.css"));
            fs::write(&p, text(20_000, i)).unwrap();
            p
        })
        .collect();
    let pool = Pool::new(1, 1).unwrap();
    let (started_tx, started_rx) = mpsc::channel();
    let (release_tx, release_rx) = mpsc::channel::<()>();
    let (done_tx, done_rx) = mpsc::channel();
    // Job A's callback holds the only worker until released.
    let a = job_for(&files[0], &cache, Coding::Gzip);
    pool.submit(
        a,
        Box::new(move |r| {
            started_tx.send(r.outcome.is_ok()).unwrap();
            let _ = release_rx.recv_timeout(Duration::from_secs(10));
        }),
    )
    .unwrap();
    assert!(
        started_rx.recv_timeout(Duration::from_secs(10)).unwrap(),
        "job A compressed"
    );
    let b = job_for(&files[1], &cache, Coding::Gzip);
    let tx = done_tx.clone();
    pool.submit(b.clone(), Box::new(move |r| tx.send(r).unwrap()))
        .unwrap();
    assert_eq!(
        pool.submit(b.clone(), Box::new(|_| ())),
        Err(Refused::Duplicate),
        "B already queued"
    );
    let c = job_for(&files[2], &cache, Coding::Gzip);
    assert_eq!(
        pool.submit(c.clone(), Box::new(|_| ())),
        Err(Refused::Full),
        "queue of 1 is taken"
    );
    assert_eq!(
        pool.in_flight(),
        1,
        "A left the set before its callback; B is in it"
    );
    release_tx.send(()).unwrap();
    let rb = done_rx.recv_timeout(Duration::from_secs(10)).unwrap();
    assert_eq!(rb.dest, b.dest);
    let len = rb.outcome.unwrap();
    assert_eq!(fs::metadata(&b.dest).unwrap().len(), len);
    assert!(!c.dest.exists(), "the refused job never ran");
    // A job whose source changed under it reports so and writes nothing.
    let mut d = job_for(&files[3], &cache, Coding::Br);
    d.expect.len += 1;
    let tx = done_tx.clone();
    pool.submit(d.clone(), Box::new(move |r| tx.send(r).unwrap()))
        .unwrap();
    let rd = done_rx.recv_timeout(Duration::from_secs(10)).unwrap();
    assert!(
        matches!(rd.outcome, Err(JobError::SourceChanged)),
        "{:?}",
        rd.outcome
    );
    assert!(!d.dest.exists());
    // A panicking callback does not kill the worker.
    pool.submit(c.clone(), Box::new(|_| panic!("callback panics")))
        .unwrap();
    let e = job_for(&files[3], &cache, Coding::Zstd);
    let tx = done_tx.clone();
    let deadline = Instant::now() + Duration::from_secs(10);
    while pool
        .submit(
            e.clone(),
            Box::new({
                let tx = tx.clone();
                move |r| tx.send(r).unwrap()
            }),
        )
        .is_err()
    {
        assert!(Instant::now() < deadline, "pool stuck");
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(done_rx
        .recv_timeout(Duration::from_secs(10))
        .unwrap()
        .outcome
        .is_ok());
    drop(pool);
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn precompressed_siblings() {
    let dir = scratch("pre");
    let file = dir.join("app.js");
    fs::write(&file, b"console.log(1)").unwrap();
    let meta = fs::metadata(&file).unwrap();
    let later = meta.modified().unwrap() + Duration::from_secs(5);
    let earlier = meta.modified().unwrap() - Duration::from_secs(5);
    for (sfx, when) in [(".br", later), (".gz", later), (".zst", earlier)] {
        let p = dir.join(format!("app.js{sfx}"));
        fs::write(&p, b"x").unwrap();
        fs::File::options()
            .write(true)
            .open(&p)
            .unwrap()
            .set_modified(when)
            .unwrap();
    }
    let all = [Coding::Br, Coding::Zstd, Coding::Gzip];
    let pick = |offered: &[Coding], ae: Option<&str>| {
        let l = precompressed::find(&file, &meta, offered, ae);
        (
            l.sibling.map(|s| {
                (
                    s.coding,
                    s.path.file_name().unwrap().to_string_lossy().into_owned(),
                )
            }),
            l.vary,
        )
    };
    let br = Some((Coding::Br, "app.js.br".to_string()));
    assert_eq!(
        pick(&all, Some("gzip, br, zstd")),
        (br.clone(), true),
        "zstd sibling is older than the file"
    );
    assert_eq!(
        pick(&all, Some("zstd")),
        (None, true),
        "only a stale zstd: the file, with Vary"
    );
    assert_eq!(pick(&all, None), (None, true));
    let gz = Some((Coding::Gzip, "app.js.gz".to_string()));
    assert_eq!(
        pick(&[Coding::Gzip, Coding::Br], Some("br, gzip")),
        (gz, true),
        "the option's order breaks ties"
    );
    assert_eq!(
        pick(&all, Some("br;q=0.5, gzip")).0.unwrap().0,
        Coding::Gzip
    );
    assert_eq!(pick(&all, Some("x-gzip")).0.unwrap().0, Coding::XGzip);
    assert_eq!(
        pick(&[Coding::Zstd], Some("zstd")),
        (None, false),
        "no usable sibling: no Vary"
    );
    assert_eq!(pick(&[], Some("br")), (None, false));
    fs::remove_file(dir.join("app.js.br")).unwrap();
    fs::create_dir(dir.join("app.js.br")).unwrap();
    assert_eq!(
        pick(&[Coding::Br], Some("br")),
        (None, false),
        "a directory is not a sibling"
    );
    assert_eq!(precompressed::suffix(Coding::Deflate), None);
    fs::remove_dir_all(&dir).unwrap();
}

/// The figure behind the pool: `cargo test --release --lib measure_7mb --
/// --ignored --nocapture` (GLINT_MEASURE_FILE=path to use a real file).
#[test]
#[ignore]
fn measure_7mb() {
    let data = match std::env::var_os("GLINT_MEASURE_FILE").filter(|p| !p.is_empty()) {
        Some(p) => fs::read(p).unwrap(),
        None => text(7 << 20, 11),
    };
    let spec = DeflateSpec::default();
    for coding in [Coding::Gzip, Coding::Br, Coding::Zstd] {
        let t = Instant::now();
        let mut e = Encoder::new(
            coding,
            &spec.encoder_params(),
            Some("text/html"),
            Some(data.len() as u64),
        )
        .unwrap();
        let (mut out, mut total) = (Vec::new(), 0usize);
        let mut longest = Duration::ZERO;
        for block in data.chunks(spec.work_block_bytes().max(1)) {
            let tb = Instant::now();
            let mut rest = block;
            while !rest.is_empty() {
                rest = &rest[e.feed(rest, &mut out).unwrap()..];
                total += out.len();
                out.clear();
            }
            longest = longest.max(tb.elapsed());
        }
        while e.finish(&mut out).unwrap() == Progress::More {
            total += out.len();
            out.clear();
        }
        total += out.len();
        let took = t.elapsed();
        eprintln!(
            "{:>5}: {} -> {} bytes ({:.1}%) in {:?}; longest {} KiB work block {:?}",
            coding.label(),
            data.len(),
            total,
            100.0 * total as f64 / data.len() as f64,
            took,
            spec.work_block_kib,
            longest
        );
        assert!(total > 0 && total < data.len());
    }
}

#[test]
fn a_job_with_its_bytes_made_writes_them_if_the_source_is_unchanged() {
    let dir = scratch("packed");
    let src = dir.join("a.css");
    fs::write(&src, text(4000, 1)).unwrap();
    let cache = dir.join("cache");
    let mut job = job_for(&src, &cache, Coding::Gzip);
    job.packed = Some(b"made on the loop".to_vec());
    assert_eq!(pool::run(&job).unwrap(), 16);
    assert_eq!(fs::read(&job.dest).unwrap(), b"made on the loop");
    // The source changed since the bytes were made: nothing is written.
    fs::remove_file(&job.dest).unwrap();
    fs::write(&src, text(4001, 2)).unwrap();
    assert!(matches!(pool::run(&job), Err(JobError::SourceChanged)));
    assert!(!job.dest.exists());
    fs::remove_dir_all(&dir).unwrap();
}

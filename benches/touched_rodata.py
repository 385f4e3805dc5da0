#!/usr/bin/env python3
"""Regenerates src/link/hot-rodata.txt: the named read-only tables that the
event loop reads, which build.rs lays out at the start of `.rodata`.

    benches/touched_rodata.py target/release/glint [--print]

Runs the binary with a small preloaded library (built here with cc) that,
at the loop's first epoll_wait, takes away access to the executable's
read-only mappings: each first touch of a page of code, and every read of
read-only data, then faults; the handler notes the address, gives the page
back for one instruction (the trap flag) and takes it away again, so every
address the loop reads is seen, not only the pages. Calls that hand the
kernel a pointer into the file (a path, a buffer to send) are wrapped so
that the read happens in user space first. After the workloads below (the
shutdown is not counted), the addresses read are matched to the binary's
data symbols (`nm`): their names, with * for a hash as in hot-text.txt,
are the list (but tables over 16 KiB, read here and there, which would
only spread the small ones). Rust's anonymous constants have no symbol and cannot be
listed by name; the script says how much of what was read they are.

--print writes the list and the figures to stdout instead of the file.
"""
import bisect
import importlib.util
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# A C compiler numbers function-local statics (kZeros.210): any number.
LOCAL_STATIC = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\.\d+$")
# A table larger than this is read here and there (aws-lc's precomputed
# points, 150 kB): it costs the pages read wherever it lies, and among the
# small tables it would only spread them.
LARGEST = 16384
_spec = importlib.util.spec_from_file_location(
    "link_profile", os.path.join(ROOT, "benches", "link_profile.py"))
link_profile = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(link_profile)

TRACER = r"""
#define _GNU_SOURCE
#define _LARGEFILE64_SOURCE 1
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <ucontext.h>
#include <unistd.h>

struct range { unsigned long lo, hi, off; int prot; };
static struct range rs[16];
static int nr, armed, logfd = -1;
static unsigned long pending[8];
static int npending;

static void note(unsigned long v) {
  char b[32]; int i = 31; b[i--] = '\n';
  do { int d = v & 15; b[i--] = d < 10 ? '0' + d : 'a' + d - 10; v >>= 4; } while (v);
  write(logfd, b + i + 1, 31 - i);
}

static void on_segv(int sig, siginfo_t *si, void *ucv) {
  ucontext_t *uc = ucv;
  unsigned long x = (unsigned long)si->si_addr, page = x & ~4095UL;
  for (int i = 0; i < nr; i++)
    if (page >= rs[i].lo && page < rs[i].hi) {
      mprotect((void *)page, 4096, rs[i].prot);
      if (rs[i].prot & PROT_EXEC) { note(page - rs[i].lo + rs[i].off); return; }
      note(x - rs[i].lo + rs[i].off);
      if (npending < 8) pending[npending++] = page;
      uc->uc_mcontext.gregs[REG_EFL] |= 0x100;
      return;
    }
  signal(SIGSEGV, SIG_DFL);
}

static void on_trap(int sig, siginfo_t *si, void *ucv) {
  ucontext_t *uc = ucv;
  for (int i = 0; i < npending; i++) mprotect((void *)pending[i], 4096, PROT_NONE);
  npending = 0;
  uc->uc_mcontext.gregs[REG_EFL] &= ~0x100UL;
}

static void arm(void) {
  char exe[512]; ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return;
  exe[n] = 0;
  logfd = open(getenv("TOUCH_OUT"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  FILE *f = fopen("/proc/self/maps", "r"); char line[1024];
  while (f && fgets(line, sizeof line, f) && nr < 16) {
    unsigned long lo, hi, off; char perms[8], path[600] = "";
    if (sscanf(line, "%lx-%lx %7s %lx %*s %*s %599s", &lo, &hi, perms, &off, path) < 4) continue;
    if (strcmp(path, exe)) continue;
    int prot;
    if (!strcmp(perms, "r--p") && off == 0) prot = PROT_READ;
    else if (!strcmp(perms, "r-xp")) prot = PROT_READ | PROT_EXEC;
    else continue;
    rs[nr].lo = lo; rs[nr].hi = hi; rs[nr].off = off; rs[nr].prot = prot; nr++;
  }
  if (f) fclose(f);
  struct sigaction sa; memset(&sa, 0, sizeof sa);
  sa.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK;
  sa.sa_sigaction = on_segv; sigaction(SIGSEGV, &sa, 0);
  sa.sa_sigaction = on_trap; sigaction(SIGTRAP, &sa, 0);
  for (int i = 0; i < nr; i++) mprotect((void *)rs[i].lo, rs[i].hi - rs[i].lo, PROT_NONE);
  armed = 1;
}

int epoll_wait(int epfd, struct epoll_event *ev, int max, int to) {
  static __typeof__(epoll_wait) *real;
  if (!real) real = dlsym(RTLD_NEXT, "epoll_wait");
  if (!armed) arm();
  return real(epfd, ev, max, to);
}

/* The kernel's reads of the file's pages would fail (EFAULT): note the
   bytes it will read and give their pages back for good. */
static void touch(const void *p, size_t len) {
  if (!armed || !p || !len) return;
  unsigned long a = (unsigned long)p, end = a + len;
  for (int i = 0; i < nr; i++) {
    if (end <= rs[i].lo || a >= rs[i].hi) continue;
    unsigned long lo = a > rs[i].lo ? a : rs[i].lo, hi = end < rs[i].hi ? end : rs[i].hi;
    note(lo - rs[i].lo + rs[i].off);
    note(hi - 1 - rs[i].lo + rs[i].off);
    lo &= ~4095UL;
    mprotect((void *)lo, ((hi + 4095) & ~4095UL) - lo, rs[i].prot);
  }
}
static void touch_str(const char *s) {
  if (!armed || !s) return;
  for (int i = 0; i < nr; i++)
    if ((unsigned long)s >= rs[i].lo && (unsigned long)s < rs[i].hi) {
      /* A path in the file: the kernel reads up to its NUL. */
      unsigned long page = (unsigned long)s & ~4095UL;
      mprotect((void *)page, 8192 <= rs[i].hi - page ? 8192 : 4096, rs[i].prot);
      touch(s, strlen(s) + 1);
      return;
    }
}
#define REAL(name) static __typeof__(name) *real; if (!real) real = dlsym(RTLD_NEXT, #name)

__asm__(".symver touch_statx,statx@@GLIBC_2.28");
int touch_statx(int d, const char *p, int fl, unsigned int m, struct statx *x) {
  static __typeof__(statx) *real; if (!real) real = dlsym(RTLD_NEXT, "statx");
  touch_str(p); return real(d, p, fl, m, x);
}
int openat(int d, const char *p, int fl, ...) {
  REAL(openat); va_list ap; va_start(ap, fl); int m = va_arg(ap, int); va_end(ap);
  touch_str(p); return real(d, p, fl, m);
}
int open64(const char *p, int fl, ...) {
  REAL(open64); va_list ap; va_start(ap, fl); int m = va_arg(ap, int); va_end(ap);
  touch_str(p); return real(p, fl, m);
}
int fstatat64(int d, const char *p, struct stat64 *st, int fl) { REAL(fstatat64); touch_str(p); return real(d, p, st, fl); }
int stat64(const char *p, struct stat64 *st) { REAL(stat64); touch_str(p); return real(p, st); }
int lstat64(const char *p, struct stat64 *st) { REAL(lstat64); touch_str(p); return real(p, st); }
ssize_t sendto(int fd, const void *b, size_t n, int fl, const struct sockaddr *a, socklen_t al) { REAL(sendto); touch(b, n); return real(fd, b, n, fl, a, al); }
ssize_t send(int fd, const void *b, size_t n, int fl) { REAL(send); touch(b, n); return real(fd, b, n, fl); }
ssize_t write(int fd, const void *b, size_t n) { REAL(write); if (fd != logfd) touch(b, n); return real(fd, b, n); }
ssize_t writev(int fd, const struct iovec *v, int k) { REAL(writev); for (int i = 0; i < k; i++) touch(v[i].iov_base, v[i].iov_len); return real(fd, v, k); }
ssize_t sendmsg(int fd, const struct msghdr *m, int fl) {
  REAL(sendmsg);
  for (size_t i = 0; i < m->msg_iovlen; i++) touch(m->msg_iov[i].iov_base, m->msg_iov[i].iov_len);
  touch(m->msg_control, m->msg_controllen); return real(fd, m, fl);
}
int setsockopt(int fd, int l, int o, const void *v, socklen_t n) { REAL(setsockopt); touch(v, n); return real(fd, l, o, v, n); }
"""

VERSIONS = "GLIBC_2.28 { global: statx; };\n"

# (group, TLS socket?, curl argument lists)
WORKLOADS = [
    ("the loop: plain socket", False, [
        ["{h}/"], ["{h}/index.html", "{h}/test.jpg"], ["{h}/missing"],
        ["-H", "Range: bytes=0-9", "{h}/index.html"],
        # One URL a curl over HTTP/2: curl 7.88 cannot reuse a connection
        # it began with prior knowledge (lighttpd's too).
        ["--http2-prior-knowledge", "{h}/"], ["--http2-prior-knowledge", "{h}/test.jpg"],
    ]),
    ("the loop: TLS socket", True, [
        ["--http1.1", "{s}/"], ["--http2", "{s}/"], ["--http2", "{s}/test.jpg"],
    ]),
]


def segments(exe):
    """(vaddr, offset, size) of the LOAD segments."""
    out = subprocess.run(["readelf", "-lW", exe], capture_output=True, text=True).stdout
    segs = []
    for line in out.splitlines():
        f = line.split()
        if f and f[0] == "LOAD":
            segs.append((int(f[2], 16), int(f[1], 16), int(f[4], 16)))
    return segs


def rodata_range(exe):
    out = subprocess.run(["readelf", "-SW", exe], capture_output=True, text=True).stdout
    for line in out.splitlines():
        m = re.match(r"\s*\[\s*\d+\]\s+\.rodata\s+\S+\s+[0-9a-f]+\s+([0-9a-f]+)\s+([0-9a-f]+)", line)
        if m:
            off, size = int(m.group(1), 16), int(m.group(2), 16)
            return off, off + size
    sys.exit(f"{exe}: no .rodata")


def data_symbols(exe):
    """(file offset, size, name) of the read-only data symbols."""
    segs = segments(exe)
    nm = subprocess.run(["nm", "-S", "--defined-only", exe], capture_output=True, text=True).stdout
    syms = []
    for line in nm.splitlines():
        f = line.split()
        if len(f) == 4 and f[2] in "rR":
            va, size = int(f[0], 16), int(f[1], 16)
            for sv, so, ss in segs:
                if sv <= va < sv + ss:
                    syms.append((va - sv + so, size, f[3]))
    return sorted(syms)


def run(exe, tmp, lib, tls, requests, log):
    port, tport = link_profile.free_port(), link_profile.free_port()
    conf = os.path.join(tmp, "glint.conf")
    with open(conf, "w") as f:
        f.write(link_profile.PLAIN.format(www=os.path.join(ROOT, "www"), port=port))
        if tls:
            f.write(link_profile.TLS.format(tport=tport, pem=os.path.join(tmp, "both.pem")))
    env = dict(os.environ, LD_PRELOAD=lib, LD_BIND_NOW="1", TOUCH_OUT=log + ".all")
    proc = subprocess.Popen([exe, "-D", "-f", conf], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        link_profile.wait_port(port, time.monotonic() + 30)
        if tls:
            link_profile.wait_port(tport, time.monotonic() + 30)
        for args in requests:
            args = [a.format(h=f"http://127.0.0.1:{port}", s=f"https://127.0.0.1:{tport}")
                    for a in args]
            codes = subprocess.run(
                ["curl", "-ksS", "--max-time", "30", "-w", "%{http_code}\n"]
                + [x for a in args for x in (("-o", "/dev/null", a) if "://" in a else (a,))],
                capture_output=True, text=True, check=True).stdout.split()
            # A server the tracing disturbed (a read it could not make) answers
            # 500: its reads would not be the real ones.
            if any(not c.isdigit() or int(c) >= 500 or int(c) == 0 for c in codes):
                sys.exit(f"curl {' '.join(args)}: answered {codes}")
        time.sleep(1.5)  # the loop's once-a-second tick
        shutil.copy(log + ".all", log)  # shutdown's reads are not the loop's
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    with open(log) as f:
        return {int(x, 16) for x in f if x.strip()}


def main():
    args = [a for a in sys.argv[1:] if a != "--print"]
    if len(args) != 1:
        sys.exit(__doc__)
    exe = os.path.realpath(args[0])
    lo, hi = rodata_range(exe)
    syms = data_symbols(exe)
    starts = [s[0] for s in syms]
    seen, groups, report = set(), [], []
    with tempfile.TemporaryDirectory() as tmp:
        src, lib = os.path.join(tmp, "touch.c"), os.path.join(tmp, "touch.so")
        with open(src, "w") as f:
            f.write(TRACER)
        with open(os.path.join(tmp, "touch.map"), "w") as f:
            f.write(VERSIONS)
        subprocess.run(["cc", "-O2", "-shared", "-fPIC", f"-Wl,--version-script={tmp}/touch.map",
                        "-o", lib, src, "-ldl"], check=True)
        link_profile.test_certificate(tmp)
        for name, tls, requests in WORKLOADS:
            read = run(exe, tmp, lib, tls, requests, os.path.join(tmp, "touched"))
            ro = sorted(a for a in read if lo <= a < hi)
            text_pages = {a for a in read if not lo <= a < hi and a % 4096 == 0}
            named, unnamed = set(), 0
            for a in ro:
                i = bisect.bisect_right(starts, a) - 1
                if i >= 0 and syms[i][0] <= a < syms[i][0] + max(syms[i][1], 1):
                    if syms[i][1] <= LARGEST:
                        named.add(LOCAL_STATIC.sub(r"\1.*", link_profile.pattern(syms[i][2])))
                else:
                    unnamed += 1
            new = sorted(named - seen)
            seen |= named
            groups.append((name, new))
            report.append(f"# {name}: {len(ro)} addresses read in .rodata on "
                          f"{len({a // 4096 for a in ro})} pages, {unnamed} of them "
                          f"outside any symbol (anonymous constants, jump tables); "
                          f"{len(text_pages)} pages of code run")
    out = ["# Named read-only tables the event loop reads, by workload; see build.rs.\n",
           "# Generated by benches/touched_rodata.py: data symbols with * where a name\n",
           "# holds a hash. (The loop's jump and lookup tables follow its functions\n",
           "# in hot-text.txt without being listed here.)\n"]
    for name, new in groups:
        out.append(f"\n## {name}\n")
        out.extend(n + "\n" for n in new)
    if "--print" in sys.argv:
        sys.stdout.write("".join(out))
    else:
        with open(os.path.join(ROOT, "src", "link", "hot-rodata.txt"), "w") as f:
            f.write("".join(out))
    for line in report:
        print(line, file=sys.stderr)


if __name__ == "__main__":
    main()

//! The TCP socket options glint sets or reads that nix has no wrapper for:
//! TCP_DEFER_ACCEPT, TCP_CORK, and TCP_INFO of a listening socket. Imports
//! nothing of glint.

use std::os::fd::{AsRawFd, BorrowedFd};

use nix::libc;

/// `tcpi_state` of a listening socket (the kernel's TCP_LISTEN).
const TCP_LISTEN: u8 = 10;

/// Sets the integer option `opt` of level IPPROTO_TCP; false when the
/// socket does not take it.
pub fn set_tcp_int(sock: BorrowedFd<'_>, opt: libc::c_int, value: libc::c_int) -> bool {
    // SAFETY: a valid socket, a pointer to a c_int and its size, as
    // setsockopt(2) requires.
    let rc = unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            libc::IPPROTO_TCP,
            opt,
            (&value as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    rc == 0
}

/// Reads the integer option `opt` of level IPPROTO_TCP.
pub fn tcp_int(sock: BorrowedFd<'_>, opt: libc::c_int) -> Option<libc::c_int> {
    let mut value: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: a valid socket, a c_int and its size in `len`, as
    // getsockopt(2) requires.
    let rc = unsafe {
        libc::getsockopt(
            sock.as_raw_fd(),
            libc::IPPROTO_TCP,
            opt,
            (&mut value as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    (rc == 0).then_some(value)
}

/// Connections waiting in a listening TCP socket's accept queue, as the
/// kernel counts them (TCP_INFO of a listening socket gives it as
/// `tcpi_unacked`); None when the socket is no TCP listener.
pub fn accept_queue(sock: BorrowedFd<'_>) -> Option<usize> {
    let mut info = std::mem::MaybeUninit::<libc::tcp_info>::zeroed();
    let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
    // SAFETY: a valid socket, a buffer of `len` bytes for the kernel to
    // fill, as getsockopt(2) requires.
    let rc = unsafe {
        libc::getsockopt(
            sock.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            info.as_mut_ptr().cast(),
            &mut len,
        )
    };
    // SAFETY: zeroed is a valid tcp_info (plain integers), and the kernel
    // filled what it wrote.
    let info = unsafe { info.assume_init() };
    (rc == 0 && info.tcpi_state == TCP_LISTEN).then_some(info.tcpi_unacked as usize)
}

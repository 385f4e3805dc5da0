//! The Kerberos libraries mod_authn_gssapi calls, loaded with dlopen(3)
//! when a configuration first asks for `gssapi` (never otherwise, so a
//! glint that does not use it neither needs nor maps them): MIT's
//! `libgssapi_krb5.so.2` (RFC 2744's C binding of GSS-API, with MIT's
//! `gss_acquire_cred_from` and `gss_krb5_copy_ccache`) and `libkrb5.so.3`.
//!
//! The declarations are the stable ABI of those sonames, from MIT krb5's
//! public headers `<gssapi/gssapi.h>`, `<gssapi/gssapi_ext.h>`,
//! `<gssapi/gssapi_krb5.h>` and `<krb5/krb5.h>` (1.20, as Debian ships
//! it): only the types, constants and functions glint uses. No binding
//! crate: the maintained ones generate their bindings with bindgen at
//! build time and link the libraries into every glint.

use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::OnceLock;

use nix::libc;

/// `OM_uint32`.
pub type OmUint32 = u32;
/// `gss_name_t`, `gss_cred_id_t`, `gss_ctx_id_t`: opaque pointers.
pub type GssName = *mut c_void;
pub type GssCred = *mut c_void;
pub type GssCtx = *mut c_void;
/// `krb5_context`, `krb5_principal`, `krb5_ccache`, `krb5_keytab`.
pub type KrbCtx = *mut c_void;
pub type KrbPrincipal = *mut c_void;
pub type KrbCcache = *mut c_void;
pub type KrbKeytab = *mut c_void;
/// `krb5_error_code`.
pub type KrbError = i32;

/// `gss_buffer_desc`.
#[repr(C)]
pub struct GssBuffer {
    pub length: usize,
    pub value: *mut c_void,
}

impl GssBuffer {
    pub fn empty() -> GssBuffer {
        GssBuffer {
            length: 0,
            value: std::ptr::null_mut(),
        }
    }

    /// The bytes the buffer holds.
    pub fn bytes(&self) -> &[u8] {
        if self.value.is_null() || self.length == 0 {
            return &[];
        }
        // SAFETY: a buffer the library filled: `length` bytes at `value`.
        unsafe { std::slice::from_raw_parts(self.value as *const u8, self.length) }
    }
}

/// `gss_OID_desc`.
#[repr(C)]
pub struct GssOid {
    pub length: OmUint32,
    pub elements: *const c_void,
}

/// `gss_key_value_element_desc` (gssapi_ext.h).
#[repr(C)]
pub struct KeyValue {
    pub key: *const c_char,
    pub value: *const c_char,
}

/// `gss_key_value_set_desc` (gssapi_ext.h).
#[repr(C)]
pub struct KeyValueSet {
    pub count: OmUint32,
    pub elements: *const KeyValue,
}

/// `krb5_data`.
#[repr(C)]
pub struct KrbData {
    pub magic: i32,
    pub length: u32,
    pub data: *mut c_char,
}

/// `krb5_keyblock`.
#[repr(C)]
pub struct KrbKeyblock {
    pub magic: i32,
    pub enctype: i32,
    pub length: u32,
    pub contents: *mut u8,
}

/// `krb5_creds`: filled by `krb5_get_init_creds_password`, released with
/// `krb5_free_cred_contents`; glint reads none of its fields.
#[repr(C)]
pub struct KrbCreds {
    pub magic: i32,
    pub client: KrbPrincipal,
    pub server: KrbPrincipal,
    pub keyblock: KrbKeyblock,
    /// `krb5_ticket_times`: authtime, starttime, endtime, renew_till.
    pub times: [i32; 4],
    pub is_skey: u32,
    pub ticket_flags: i32,
    pub addresses: *mut c_void,
    pub ticket: KrbData,
    pub second_ticket: KrbData,
    pub authdata: *mut c_void,
}

/// `krb5_verify_init_creds_opt`.
#[repr(C)]
pub struct VerifyOpt {
    pub flags: i32,
    pub ap_req_nofail: c_int,
}

/// `KRB5_VERIFY_INIT_CREDS_OPT_AP_REQ_NOFAIL`.
pub const VERIFY_OPT_AP_REQ_NOFAIL: i32 = 0x0001;
/// `GSS_C_INDEFINITE`.
pub const GSS_C_INDEFINITE: OmUint32 = 0xffff_ffff;
/// `GSS_C_ACCEPT` (`gss_cred_usage_t`).
pub const GSS_C_ACCEPT: c_int = 2;
/// `GSS_C_GSS_CODE`, `GSS_C_MECH_CODE`.
pub const GSS_C_GSS_CODE: c_int = 1;
pub const GSS_C_MECH_CODE: c_int = 2;
/// `GSS_C_DELEG_FLAG`, `GSS_C_CONF_FLAG`.
pub const GSS_C_DELEG_FLAG: OmUint32 = 1;
pub const GSS_C_CONF_FLAG: OmUint32 = 16;

/// `GSS_S_CONTINUE_NEEDED`: the context needs another token.
pub const GSS_S_CONTINUE_NEEDED: OmUint32 = 1;

/// `GSS_ERROR(x)`: a calling or routine error.
pub fn gss_error(major: OmUint32) -> bool {
    major & 0xffff_0000 != 0
}

/// `GSS_KRB5_NT_PRINCIPAL_NAME`: {iso(1) member-body(2) us(840)
/// mit(113554) infosys(1) gssapi(2) krb5(2) krb5_name(1)} (RFC 1964).
pub static KRB5_NT_PRINCIPAL_NAME: [u8; 10] =
    [0x2a, 0x86, 0x48, 0x86, 0xf7, 0x12, 0x01, 0x02, 0x02, 0x01];

macro_rules! table {
    ($(#[$m:meta])* $name:ident { $( fn $f:ident ( $($a:ty),* ) $(-> $r:ty)? ; )* }) => {
        $(#[$m])*
        #[allow(clippy::type_complexity)]
        pub struct $name {
            $( pub $f: unsafe extern "C" fn($($a),*) $(-> $r)?, )*
        }

        impl $name {
            /// Every symbol from `handle`, or the first one missing.
            fn load(handle: *mut c_void) -> Result<$name, String> {
                Ok($name {
                    $( $f: {
                        let p = symbol(handle, concat!(stringify!($f), "\0"))?;
                        // SAFETY: the symbol is the function declared
                        // here, with the C signature of its header.
                        unsafe {
                            std::mem::transmute::<*mut c_void, unsafe extern "C" fn($($a),*) $(-> $r)?>(p)
                        }
                    }, )*
                })
            }
        }
    };
}

table! {
    /// libgssapi_krb5.so.2.
    Gss {
        fn gss_import_name(*mut OmUint32, *const GssBuffer, *const GssOid, *mut GssName) -> OmUint32;
        fn gss_display_name(*mut OmUint32, GssName, *mut GssBuffer, *mut *const GssOid) -> OmUint32;
        fn gss_acquire_cred(*mut OmUint32, GssName, OmUint32, *const c_void, c_int, *mut GssCred, *mut c_void, *mut OmUint32) -> OmUint32;
        fn gss_acquire_cred_from(*mut OmUint32, GssName, OmUint32, *const c_void, c_int, *const KeyValueSet, *mut GssCred, *mut c_void, *mut OmUint32) -> OmUint32;
        fn gss_accept_sec_context(*mut OmUint32, *mut GssCtx, GssCred, *const GssBuffer, *const c_void, *mut GssName, *mut *const GssOid, *mut GssBuffer, *mut OmUint32, *mut OmUint32, *mut GssCred) -> OmUint32;
        fn gss_delete_sec_context(*mut OmUint32, *mut GssCtx, *mut GssBuffer) -> OmUint32;
        fn gss_release_cred(*mut OmUint32, *mut GssCred) -> OmUint32;
        fn gss_release_name(*mut OmUint32, *mut GssName) -> OmUint32;
        fn gss_release_buffer(*mut OmUint32, *mut GssBuffer) -> OmUint32;
        fn gss_display_status(*mut OmUint32, OmUint32, c_int, *const GssOid, *mut OmUint32, *mut GssBuffer) -> OmUint32;
        fn gss_krb5_copy_ccache(*mut OmUint32, GssCred, KrbCcache) -> OmUint32;
    }
}

table! {
    /// libkrb5.so.3.
    Krb {
        fn krb5_init_context(*mut KrbCtx) -> KrbError;
        fn krb5_free_context(KrbCtx);
        fn krb5_parse_name(KrbCtx, *const c_char, *mut KrbPrincipal) -> KrbError;
        fn krb5_free_principal(KrbCtx, KrbPrincipal);
        fn krb5_cc_resolve(KrbCtx, *const c_char, *mut KrbCcache) -> KrbError;
        fn krb5_cc_initialize(KrbCtx, KrbCcache, KrbPrincipal) -> KrbError;
        fn krb5_cc_store_cred(KrbCtx, KrbCcache, *mut KrbCreds) -> KrbError;
        fn krb5_cc_close(KrbCtx, KrbCcache) -> KrbError;
        fn krb5_cc_destroy(KrbCtx, KrbCcache) -> KrbError;
        fn krb5_kt_resolve(KrbCtx, *const c_char, *mut KrbKeytab) -> KrbError;
        fn krb5_kt_close(KrbCtx, KrbKeytab) -> KrbError;
        fn krb5_get_init_creds_password(KrbCtx, *mut KrbCreds, KrbPrincipal, *const c_char, *const c_void, *mut c_void, i32, *const c_char, *mut c_void) -> KrbError;
        fn krb5_verify_init_creds(KrbCtx, *mut KrbCreds, KrbPrincipal, KrbKeytab, *mut KrbCcache, *mut VerifyOpt) -> KrbError;
        fn krb5_free_cred_contents(KrbCtx, *mut KrbCreds);
        fn krb5_get_error_message(KrbCtx, KrbError) -> *const c_char;
        fn krb5_free_error_message(KrbCtx, *const c_char);
    }
}

/// Both libraries' functions.
pub struct Lib {
    pub gss: Gss,
    pub krb: Krb,
}

// SAFETY: plain function pointers into libraries that stay loaded.
unsafe impl Send for Lib {}
unsafe impl Sync for Lib {}

fn dl_error() -> String {
    // SAFETY: dlerror returns NULL or a NUL-terminated message.
    let p = unsafe { libc::dlerror() };
    if p.is_null() {
        "unknown error".into()
    } else {
        // SAFETY: as above.
        unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
    }
}

fn open(name: &CStr) -> Result<*mut c_void, String> {
    // SAFETY: a NUL-terminated file name; the handle is never closed.
    let h = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
    if h.is_null() {
        return Err(format!(
            "cannot load {} ({}); install libgssapi-krb5-2",
            name.to_string_lossy(),
            dl_error()
        ));
    }
    Ok(h)
}

fn symbol(handle: *mut c_void, name: &str) -> Result<*mut c_void, String> {
    // SAFETY: `name` ends in NUL (the table's concat!), handle is open.
    let p = unsafe { libc::dlsym(handle, name.as_ptr() as *const c_char) };
    if p.is_null() {
        return Err(format!(
            "{} has no {}",
            if name.starts_with("gss") {
                "libgssapi_krb5.so.2"
            } else {
                "libkrb5.so.3"
            },
            name.trim_end_matches('\0')
        ));
    }
    Ok(p)
}

static LIB: OnceLock<Result<Lib, String>> = OnceLock::new();

/// The libraries, loaded on the first call; `Err` says what is missing.
pub fn lib() -> Result<&'static Lib, String> {
    LIB.get_or_init(|| {
        let g = open(c"libgssapi_krb5.so.2")?;
        let k = open(c"libkrb5.so.3")?;
        Ok(Lib {
            gss: Gss::load(g)?,
            krb: Krb::load(k)?,
        })
    })
    .as_ref()
    .map_err(Clone::clone)
}

/// The message for a krb5 error code.
pub(super) fn krb_message(lib: &Lib, ctx: KrbCtx, code: KrbError) -> String {
    // SAFETY: ctx may be NULL (the library then uses com_err's table);
    // the message is freed with its own function.
    unsafe {
        let p = (lib.krb.krb5_get_error_message)(ctx, code);
        if p.is_null() {
            return format!("krb5 error {code}");
        }
        let s = CStr::from_ptr(p).to_string_lossy().into_owned();
        (lib.krb.krb5_free_error_message)(ctx, p);
        s
    }
}

/// gss_display_status's messages for a major and minor status, as
/// lighttpd logs them: `major (minor)` per message.
pub(super) fn gss_message(lib: &Lib, major: OmUint32, minor: OmUint32) -> String {
    let mut out = String::new();
    let mut msg_ctx: OmUint32 = 0;
    // Bounded: GSS-API gives a handful of messages per status.
    for _ in 0..8 {
        let mut min = 0;
        let mut buf = GssBuffer::empty();
        // SAFETY: out-parameters owned here; the buffer is released.
        let maj = unsafe {
            (lib.gss.gss_display_status)(
                &mut min,
                major,
                GSS_C_GSS_CODE,
                std::ptr::null(),
                &mut msg_ctx,
                &mut buf,
            )
        };
        if gss_error(maj) {
            break;
        }
        out.push_str(&String::from_utf8_lossy(buf.bytes()));
        // SAFETY: a buffer the library allocated.
        unsafe { (lib.gss.gss_release_buffer)(&mut min, &mut buf) };
        let mut mech_ctx: OmUint32 = 0;
        let mut mbuf = GssBuffer::empty();
        // SAFETY: as above.
        let maj = unsafe {
            (lib.gss.gss_display_status)(
                &mut min,
                minor,
                GSS_C_MECH_CODE,
                std::ptr::null(),
                &mut mech_ctx,
                &mut mbuf,
            )
        };
        if !gss_error(maj) {
            out.push_str(" (");
            out.push_str(&String::from_utf8_lossy(mbuf.bytes()));
            out.push(')');
            // SAFETY: as above.
            unsafe { (lib.gss.gss_release_buffer)(&mut min, &mut mbuf) };
        }
        if msg_ctx == 0 {
            break;
        }
    }
    out
}

//! `server.chroot`, `server.groupname`, `server.username`: applied after the
//! listeners are bound (port 80 needs root) and the log and pid files are
//! open, before the first request.
//!
//! Names are looked up before `chroot`, in the system's user database.
//! Without `server.groupname` the user's primary group is used (never root's
//! group by accident). glint refuses to go on as root when a user is
//! configured and the switch did not happen.
//!
//! After `server.chroot`, every path glint opens (the document root, files
//! named in conditionals, a configuration read again on SIGUSR1, log files
//! reopened on SIGHUP) is a path inside the chroot.

use std::ffi::CString;
use std::path::{Path, PathBuf};

use nix::unistd::{
    chdir, chroot, geteuid, getuid, initgroups, setgid, setgroups, setuid, Gid, Group, Uid, User,
};

use crate::config::Settings;

/// What to switch to, looked up from the settings.
#[derive(Debug)]
pub struct Plan {
    chroot: Option<PathBuf>,
    user: Option<User>,
    group: Option<Group>,
}

impl Plan {
    /// Looks up `server.username` and `server.groupname`; an unknown name is an error.
    pub fn from_settings(s: &Settings) -> Result<Plan, String> {
        let user = match s.process.username.as_deref().filter(|u| !u.is_empty()) {
            Some(name) => Some(
                User::from_name(name)
                    .map_err(|e| format!("server.username {name}: {e}"))?
                    .ok_or_else(|| format!("server.username {name}: no such user"))?,
            ),
            None => None,
        };
        let group = match s.process.groupname.as_deref().filter(|g| !g.is_empty()) {
            Some(name) => Some(
                Group::from_name(name)
                    .map_err(|e| format!("server.groupname {name}: {e}"))?
                    .ok_or_else(|| format!("server.groupname {name}: no such group"))?,
            ),
            None => None,
        };
        let chroot = s
            .process
            .chroot
            .as_deref()
            .filter(|c| !c.is_empty())
            .map(PathBuf::from);
        Ok(Plan {
            chroot,
            user,
            group,
        })
    }

    /// The directory `server.chroot` names, if any.
    pub fn chroot_dir(&self) -> Option<&Path> {
        self.chroot.as_deref()
    }

    /// Whether there is anything to do.
    pub fn is_empty(&self) -> bool {
        self.chroot.is_none() && self.user.is_none() && self.group.is_none()
    }

    /// Applies the plan: chroot, then groups, then the user.
    pub fn apply(&self) -> Result<(), String> {
        let root = geteuid().is_root();
        if let Some(dir) = &self.chroot {
            chroot(dir).map_err(|e| format!("server.chroot {}: {e}", dir.display()))?;
            chdir("/").map_err(|e| format!("server.chroot {}: chdir: {e}", dir.display()))?;
        }
        let gid: Option<Gid> = self
            .group
            .as_ref()
            .map(|g| g.gid)
            .or(self.user.as_ref().map(|u| u.gid));
        if !root {
            // Only root can switch; going on as the same user is harmless.
            if let Some(u) = &self.user {
                if u.uid != getuid() {
                    log::warn!(
                        "server.username {}: not running as root; staying uid {}",
                        u.name,
                        getuid()
                    );
                }
            }
            return Ok(());
        }
        if let Some(gid) = gid {
            setgid(gid).map_err(|e| format!("setgid({gid}): {e}"))?;
            match &self.user {
                Some(u) => {
                    let name = CString::new(u.name.as_bytes())
                        .map_err(|_| format!("server.username {}: bad name", u.name))?;
                    initgroups(&name, gid).map_err(|e| format!("initgroups({}): {e}", u.name))?;
                }
                None => setgroups(&[gid]).map_err(|e| format!("setgroups: {e}"))?,
            }
        }
        if let Some(u) = &self.user {
            setuid(u.uid).map_err(|e| format!("setuid({}): {e}", u.uid))?;
            if !u.uid.is_root() && (getuid().is_root() || geteuid().is_root()) {
                return Err(format!(
                    "still root after switching to {}; refusing to run",
                    u.name
                ));
            }
            log::info!("running as user {} (uid {})", u.name, u.uid);
        } else if geteuid() == Uid::from_raw(0) {
            log::warn!("running as root: set server.username to drop privileges");
        }
        Ok(())
    }
}

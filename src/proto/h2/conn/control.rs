//! The control frames that touch no field block: RST_STREAM, SETTINGS,
//! WINDOW_UPDATE and PRIORITY_UPDATE.

use super::*;
use crate::proto::h2::frame;

use ErrorCode as E;

impl Connection {
    pub(super) fn on_rst(
        &mut self,
        id: StreamId,
        code: ErrorCode,
        now_ms: u64,
    ) -> Result<(), Error> {
        if self.after_goaway(id) {
            return Ok(());
        }
        if id > self.last_stream {
            return Err(Error::conn(
                E::PROTOCOL_ERROR,
                "RST_STREAM on an idle stream",
            ));
        }
        if self.streams.contains_key(&id) {
            self.remove_stream(id, Closed::ResetByPeer);
            self.events.push_back(Event::Reset {
                stream: id,
                code,
                by_peer: true,
            });
            // Rapid reset (CVE-2023-44487).
            self.spend_reset(now_ms)?;
        }
        Ok(())
    }

    pub(super) fn on_settings(&mut self, params: frame::Settings<'_>) -> Result<(), Error> {
        self.apply_settings(params)?;
        self.provoked()?;
        encode::settings_ack(&mut self.out);
        Ok(())
    }

    /// Takes the client's settings (from a SETTINGS frame or HTTP2-Settings).
    pub(super) fn apply_settings(&mut self, params: frame::Settings<'_>) -> Result<(), Error> {
        for (id, v) in params.iter() {
            match id {
                setting::HEADER_TABLE_SIZE => self.encoder.set_max_table_size(v),
                setting::INITIAL_WINDOW_SIZE => {
                    // §6.9.2: every stream's window moves by the difference.
                    let delta = v as i64 - self.peer.initial_window as i64;
                    for s in self.streams.values_mut() {
                        s.send_window += delta;
                        if s.send_window > frame::MAX_WINDOW as i64 {
                            return Err(Error::conn(
                                E::FLOW_CONTROL_ERROR,
                                "SETTINGS_INITIAL_WINDOW_SIZE takes a window past 2^31-1",
                            ));
                        }
                    }
                    self.peer.initial_window = v;
                }
                setting::MAX_FRAME_SIZE => self.peer.max_frame_size = v,
                _ => {}
            }
        }
        Ok(())
    }

    pub(super) fn on_window_update(&mut self, id: StreamId, increment: u32) -> Result<(), Error> {
        if id == 0 {
            self.conn_send = flow::grow(self.conn_send, increment).ok_or(Error::conn(
                E::FLOW_CONTROL_ERROR,
                "connection window past 2^31-1",
            ))?;
            return Ok(());
        }
        if self.after_goaway(id) {
            return Ok(());
        }
        if id > self.last_stream {
            return Err(Error::conn(
                E::PROTOCOL_ERROR,
                "WINDOW_UPDATE on an idle stream",
            ));
        }
        if let Some(s) = self.streams.get_mut(&id) {
            s.send_window = flow::grow(s.send_window, increment).ok_or(Error::stream(
                id,
                E::FLOW_CONTROL_ERROR,
                "stream window past 2^31-1",
            ))?;
        }
        Ok(())
    }

    pub(super) fn on_priority_update(&mut self, id: StreamId, value: &[u8]) {
        // A new value replaces the old whole (RFC 9218 §7).
        let pr = Priority::default().apply(value);
        if let Some(s) = self.streams.get_mut(&id) {
            s.priority = pr;
            if s.ready && s.queued_at != Some(pr.urgency) {
                s.queued_at = Some(pr.urgency);
                self.sched.push(id, pr.urgency);
            }
        } else if id > self.last_stream && id % 2 == 1 {
            // Kept for when the stream opens, as many as streams may be open.
            self.early_priority.retain(|(sid, _)| *sid != id);
            if self.early_priority.len() >= self.cfg.max_concurrent_streams as usize {
                self.early_priority.pop_front();
            }
            self.early_priority.push_back((id, pr));
        }
    }
}

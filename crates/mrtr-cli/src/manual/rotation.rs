//! Keys for a fleet, and the three-phase rotation runbook.
//!
//! # The key ring
//!
//! A [`Keyring`] holds one key that seals and any number of keys that only
//! open. Every token names its key by kid, in clear (see [`token_format`]), and
//! `open` uses exactly that key: rotation costs no trial decryptions, and a
//! token under a key the ring no longer holds fails as `unknown_key` (the
//! uniform `-32602` for the client). Every instance of a fleet needs the same
//! ring and the same audience (`mrtr serve --audience`), or the instances cannot
//! open each other's state.
//!
//! # Making a key
//!
//! `mrtr keygen` prints a fresh key: 32 random bytes from the operating system,
//! base64url without padding (43 characters); [`generate_key_string`] does the
//! same in code. Any base64url string of at least 32 random bytes works
//! (`head -c 32 /dev/urandom | basenc --base64url`; padding is accepted).
//! Exactly 32 bytes are used as they are; a longer secret, such as 64 bytes from
//! a secret manager, is condensed with HKDF-SHA256 ([`Key::from_secret`]).
//! Shorter secrets are refused. Never use a password: the bytes must be random.
//!
//! # Where keys come from
//!
//! - **`MRTR_KEYS`**: comma-separated base64url keys; the **first seals**, the
//!   others only open. Whitespace around an entry and empty entries are ignored.
//!   Example: `MRTR_KEYS=NEWKEY,OLDKEY`.
//! - **`--keys-file PATH`** (`mrtr serve`, `mrtr inspect`): a file in the same
//!   format, where newlines separate entries as commas do and `#` starts a
//!   comment that runs to the end of the line:
//!
//!   ```text
//!   # mrtr keys: the first one seals
//!   NEWKEY   # added 2026-11-30
//!   OLDKEY   # remove after the rotation window
//!   ```
//!
//!   When both are given, the file wins.
//! - **Neither**: `mrtr serve` uses an ephemeral key for this process only, and
//!   warns that a fleet needs a shared one. Its tokens do not survive a restart
//!   and no other instance can open them. `MRTR_KEYS` set but empty, or not
//!   UTF-8, is a configuration error (exit code 2): an operator who meant to set
//!   it must not silently get a per-process key.
//!
//! A bad entry is reported by its position (from 1), never by its value; two
//! entries with the same kid (usually the same key twice) are refused. In code:
//! [`Keyring::parse_keys`] and [`Keyring::parse_key_file`] parse the two formats
//! (the core reads no file and no environment: your application reads
//! `MRTR_KEYS` or the file and passes the text, as `mrtr_cli::serve::KeySource` does for
//! `mrtr serve`; decide explicitly what your server does when neither is set),
//! and [`Keyring::new`] with [`Keyring::with_open_only`] build a ring in code.
//!
//! # Rotation runbook
//!
//! Rotate in three phases: three deploys, or three edits of the key file each
//! followed by SIGHUP ([live reload](#live-reload-with-sighup), no restart). Each
//! phase must be complete on **every** instance before the next one starts.
//!
//! 1. **Add the new key as an opener.** `MRTR_KEYS=OLD,NEW`. Nothing seals
//!    with `NEW` yet, but every instance can open what it will seal. Skipping
//!    this phase would let an instance that already seals with `NEW` hand out
//!    tokens that instances still running the old ring refuse as `unknown_key`.
//! 2. **Promote the new key to sealer.** `MRTR_KEYS=NEW,OLD`. New tokens are
//!    sealed with `NEW`; tokens sealed with `OLD` still open. While this deploy
//!    rolls out, both keys seal on different instances, and every instance opens
//!    both.
//! 3. **Remove the old key** once the last instance has sealed with `OLD` for
//!    the last time, plus the longest flow lifetime configured on any instance,
//!    plus the clock skew: with the defaults, 1 hour and 60 seconds after phase 2
//!    finished. `MRTR_KEYS=NEW`. An instance reloading its key file checks this
//!    for what it sealed itself, and refuses the new ring if it is too early
//!    ([below](#a-ring-that-would-break-flows-in-flight)).
//!
//! Why that wait is enough: every token carries its flow's absolute deadline,
//! fixed when the flow began and never extended, and no token opens after that
//! deadline plus the clock skew. A token sealed with `OLD` at time `t` belongs to
//! a flow that began at or before `t`, so it is dead by `t + flow lifetime +
//! skew` whatever its round expiry (`mrtr serve --state-ttl` cannot push a round
//! past the deadline). The flow lifetime is [`SealConfig::flow_lifetime`]
//! (default [`FLOW_LIFETIME`], 1 hour; `mrtr serve` uses the default)
//! and the skew [`SealConfig::clock_skew`] (default 60 s, `mrtr serve
//! --clock-skew`).
//!
//! # Live reload with SIGHUP
//!
//! `mrtr serve --keys-file PATH` re-reads the file on SIGHUP, over HTTP and stdio
//! alike, and swaps the new ring in at once: requests already being handled finish
//! with the ring they started with, every later one uses the new ring, and flows in
//! progress go on as long as the new ring still holds the key that sealed their
//! state. So the three phases above run on a live fleet without a restart and
//! without a failed flow: for each phase, on every instance,
//!
//! ```text
//! # phase 1: OLD then NEW; phase 2: NEW then OLD; phase 3: NEW
//! (umask 077; printf '%s\n' NEWKEY OLDKEY > /etc/mrtr/keys.tmp)   # next to the file
//! mv /etc/mrtr/keys.tmp /etc/mrtr/keys   # a rename: the old file or the new one, never a part
//! kill -HUP "$(pidof mrtr)"     # or systemctl reload, with ExecReload=/bin/kill -HUP $MAINPID
//! ```
//!
//! ## Writing the key file
//!
//! Write the new file under a temporary name **in the same directory**, then
//! `rename` it over the old one (`mv` within one file system does). A rename
//! replaces the name in one step,
//! so a reload, yours or one a `systemctl reload` or a configuration tool sends at
//! any moment, reads the whole old file or the whole new one. Writing the file in
//! place (`>` in a shell, an editor that saves over the file, a configuration
//! tool's plain write) truncates it first, and a reload in between reads what was
//! written so far. Most such reads do not parse, and keep the ring; but a rotation
//! file `NEW` then `OLD` read after its first line is a valid ring of `NEW` alone,
//! which would drop the key of every flow in flight. That one is caught (next
//! section); write atomically all the same. Keep the temporary file out of reach
//! of other users (`umask 077`) and on the same file system (a `mv` across file
//! systems copies, which is not atomic).
//!
//! and check the log of each instance (stderr, target `mrtr::keys`) before moving
//! to the next phase:
//!
//! ```text
//! INFO mrtr::keys: key ring reloaded path=/etc/mrtr/keys kids=NEWKID,OLDKID sealing=NEWKID keys=2
//! ```
//!
//! `kids` lists the ring's kids, the sealing one first; `removed` (phase 3) the
//! kids of the previous ring that the new one no longer holds. Kids are public (every token carries its kid in
//! clear); key bytes and the file's contents are never logged. After phase 2,
//! `mrtr inspect` on a fresh `requestState` shows the new kid.
//!
//! - A file that cannot be read or does not parse (a typo, a half-written file,
//!   a wrong path) **keeps the ring in force** and logs `key ring not reloaded`
//!   at ERROR with the path and the reason (a bad entry by its position, never its
//!   value). Fix the file and send SIGHUP again. Write the file atomically
//!   ([above](#writing-the-key-file)) so that a SIGHUP from elsewhere never reads
//!   it half-written.
//! - A ring that would break this instance's flows in flight is refused too
//!   ([next section](#a-ring-that-would-break-flows-in-flight)).
//! - A reload whose sealing key was not in the previous ring logs a WARN: on a
//!   fleet, phase 1 was skipped, and instances that do not hold the key yet
//!   refuse its states as `unknown_key`. (For a single instance, or a compromised
//!   key, that is expected.)
//! - With `MRTR_KEYS` or an ephemeral key there is no file to re-read: SIGHUP logs
//!   `nothing to reload` at WARN and changes nothing. It never stops the server.
//!   Rotate such instances with restarts.
//!
//! ## A ring that would break flows in flight
//!
//! A reload is refused, and the ring in force kept, when the new ring lacks
//!
//! - the key this instance seals with now, or
//! - a key it sealed with whose states may still open: until the latest flow
//!   deadline it sealed under that key plus the clock skew (at most the flow
//!   lifetime plus the skew after its last seal, 1 h and 60 s by default),
//!
//! unless the new ring still opens those states: it holds a key with the same kid
//! **and the same secret** (as sealing or open-only key; a kid is 4 bytes, so a
//! different key with the same kid does not count). The log says which:
//!
//! ```text
//! ERROR mrtr::keys: key ring not reloaded: keeping the previous ring (...) path=/etc/mrtr/keys in_use=OLDKID error=the new key ring drops key OLDKID (it seals now): ...
//! ```
//!
//! That is what a rotation file `NEW` then `OLD` caught after its first line
//! looks like (it parses, as a ring of `NEW` alone), and what phase 3 looks like
//! when it comes too early for this instance. Finish the file, or wait, and send
//! SIGHUP again. Keys the instance holds only to open what other instances
//! sealed are not checked: the fleet-wide wait of phase 3 covers them.
//!
//! What an instance sealed with, and until when, is recorded in memory as it
//! seals. A restarted process starts afresh: it protects only the sealing key
//! of the ring it started with, and takes at start-up whatever ring it is given.
//! So a restart is the way to drop a key at once (a [compromised
//! key](#a-compromised-key)).
//!
//! Embedding the engine, swap the ring yourself: [`Sealer::try_replace_keyring`]
//! makes the check above (every clone of the sealer, the engine's and the
//! service's, sees the new ring; [`Sealer::replace_keyring`] swaps without
//! checking), or, from the `mrtr-cli` crate's library, `mrtr_cli::serve::reload_keys`
//! with a `mrtr_cli::serve::KeySource` from your own trigger.
//!
//! # Checking a rotation
//!
//! - Each refusal is counted per reason ([`Sealer::reject_counts`]), its reason
//!   is on the request's log line (`reject_reason`), and a `tracing` event
//!   names the token's kid (target `mrtr::seal`, debug level for
//!   `unknown_key`: `RUST_LOG=mrtr::seal=debug`). After phase 3, `unknown_key`
//!   refusals naming the old kid mean the key was removed too early, or an
//!   instance still seals with it.
//! - `mrtr inspect TOKEN` (keys from `--keys-file` or `MRTR_KEYS`) opens a token
//!   with the ring's keys and prints its claims, kid included, or the private
//!   reason it does not open. The output holds the decrypted state: it is for
//!   the operator only.
//! - A ring's `Debug` shows the sealing kid and the open-only kids, never key
//!   bytes; so does each `key ring reloaded` line (above).
//!
//! # A compromised key
//!
//! A leaked key lets its holder read every state sealed under it and forge
//! states for any request and principal. Do not wait out the rotation window:
//! deploy a ring without it (`MRTR_KEYS=NEW`, or a key file holding only `NEW`)
//! at once, by **restarting** every instance: a SIGHUP refuses a ring that drops
//! a key the instance sealed with within the flow lifetime (see
//! [above](#a-ring-that-would-break-flows-in-flight)), while a new process takes
//! the ring it is started with. Flows in progress under
//! the leaked key then fail with the uniform `-32602`, and their clients must
//! start over; that is the price of closing the hole.
//!
//! [`Keyring`]: mrtr::seal::Keyring
//! [`Keyring::parse_keys`]: mrtr::seal::Keyring::parse_keys
//! [`Keyring::parse_key_file`]: mrtr::seal::Keyring::parse_key_file
//! [`Sealer::replace_keyring`]: mrtr::seal::Sealer::replace_keyring
//! [`Sealer::try_replace_keyring`]: mrtr::seal::Sealer::try_replace_keyring
//! [`Keyring::new`]: mrtr::seal::Keyring::new
//! [`Keyring::with_open_only`]: mrtr::seal::Keyring::with_open_only
//! [`Key::from_secret`]: mrtr::seal::Key::from_secret
//! [`generate_key_string`]: mrtr::seal::generate_key_string
//! [`SealConfig::flow_lifetime`]: mrtr::seal::SealConfig::flow_lifetime
//! [`SealConfig::clock_skew`]: mrtr::seal::SealConfig::clock_skew
//! [`FLOW_LIFETIME`]: mrtr::defaults::FLOW_LIFETIME
//! [`Sealer::reject_counts`]: mrtr::seal::Sealer::reject_counts
//! [`token_format`]: mrtr::manual::token_format

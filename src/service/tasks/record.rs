//! A task's record and its rules: what a [`TaskStore`](super::store::TaskStore)
//! keeps of a task, and every change a request or a run makes to it, as pure
//! functions of the record (the service reads it, applies one, and writes it
//! back with a compare-and-set).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use super::store::StoredTask;
use crate::defaults::{TASK_POLL_INTERVAL, TASK_TTL};
use crate::engine::Outcome;
use crate::error::Error;
use crate::principal::Principal;
use crate::time::Timestamp;

/// The format of a record; a record of another format is not read.
const FORMAT: u8 = 1;

/// Domain label of an owner's digest.
const OWNER_LABEL: &[u8] = b"mrtr/tasks/v1/owner";

/// Domain label of a task's flow id.
const FLOW_LABEL: &[u8] = b"mrtr/tasks/v1/flow";

/// A task's status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum Status {
    Working,
    InputRequired,
    Completed,
    Failed,
    Cancelled,
}

impl Status {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            Self::Working => "working",
            Self::InputRequired => "input_required",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
        }
    }

    pub(super) fn is_terminal(self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Cancelled)
    }
}

/// Who created a task: what its runs are bound to, on any instance.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Creator {
    sub: Option<String>,
    iss: Option<String>,
    cid: Option<String>,
    /// The caller's address, for an anonymous caller's replay quota.
    peer: Option<std::net::IpAddr>,
}

impl Creator {
    pub(super) fn of(ctx: &crate::service::RequestContext) -> Self {
        let p = &ctx.principal;
        Self {
            sub: p.subject_id().map(str::to_owned),
            iss: p.issuer().map(str::to_owned),
            cid: p.client_id().map(str::to_owned),
            peer: ctx.peer,
        }
    }

    /// The principal, as the request that created the task had it.
    pub(super) fn principal(&self) -> Principal {
        let mut p = match &self.sub {
            Some(sub) => Principal::subject(sub.as_str()),
            None => Principal::anonymous(),
        };
        if let Some(iss) = &self.iss {
            p = p.with_issuer(iss.as_str());
        }
        if let Some(cid) = &self.cid {
            p = p.with_client_id(cid.as_str());
        }
        p
    }

    pub(super) fn peer(&self) -> Option<std::net::IpAddr> {
        self.peer
    }
}

/// Who runs a task now, and until when, unless they renew.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Lease {
    /// The runner's random id (one an instance).
    pub(super) holder: String,
    pub(super) until: Timestamp,
}

/// A task, as it is stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct Record {
    format: u8,
    /// A digest of the creator's caller key ([`owner_digest`]).
    pub(super) owner: String,
    pub(super) creator: Creator,
    pub(super) created: Timestamp,
    pub(super) updated: Timestamp,
    pub(super) status: Status,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) message: Option<String>,
    /// The `tools/call` params each run is made of: the name, the arguments
    /// and the creating request's `_meta`.
    pub(super) params: Map<String, Value>,
    /// The sealed state of the last run that asked (never sent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) request_state: Option<String>,
    /// The questions not answered yet, by the key the client sees.
    #[serde(default)]
    pub(super) outstanding: Map<String, Value>,
    /// Every key the client was ever asked under, each with the handler's key
    /// it stands for: a question the handler asks again (an answer it did not
    /// accept) is asked under a key of its own, as keys are unique for a
    /// task's life.
    #[serde(default)]
    pub(super) asked: Map<String, Value>,
    /// The answers given to the last run's questions.
    #[serde(default)]
    pub(super) answers: Map<String, Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) result: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) error: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) lease: Option<Lease>,
}

/// The digest a caller's tasks are kept under: no principal name reaches the
/// store.
pub(super) fn owner_digest(caller_key: &str) -> String {
    let mut h = Sha256::new();
    h.update(OWNER_LABEL);
    h.update(caller_key.as_bytes());
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// The flow id of the task `id`'s runs (the `once` claims' key, the same on
/// every instance and in every run).
pub(super) fn flow_id(id: &str) -> [u8; 16] {
    let mut h = Sha256::new();
    h.update(FLOW_LABEL);
    h.update(id.as_bytes());
    let mut out = [0u8; 16];
    out.copy_from_slice(&h.finalize()[..16]);
    out
}

/// What a run made of a record changes: a change to write back, or nothing.
pub(super) enum Change<R> {
    Write(R),
    Keep(R),
}

impl Record {
    /// A new task from a `tools/call`'s `params` (the name, the arguments,
    /// `_meta`, and the state and answers of the MRTR round it follows, if
    /// any), `working`, its run reserved for the instance that creates it
    /// (`reserve`: another takes it only if that lease lapses).
    pub(super) fn new(
        params: &Map<String, Value>,
        creator: Creator,
        owner: String,
        now: Timestamp,
        reserve: Lease,
    ) -> Self {
        let mut kept = Map::new();
        for key in ["name", "arguments", "_meta"] {
            if let Some(v) = params.get(key) {
                kept.insert(key.into(), v.clone());
            }
        }
        let request_state = params
            .get("requestState")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let answers = match params.get("inputResponses") {
            Some(Value::Object(a)) => a.clone(),
            _ => Map::new(),
        };
        Self {
            format: FORMAT,
            owner,
            creator,
            created: now,
            updated: now,
            status: Status::Working,
            message: None,
            params: kept,
            request_state,
            outstanding: Map::new(),
            asked: Map::new(),
            answers,
            result: None,
            error: None,
            lease: Some(reserve),
        }
    }

    /// Reads a stored record.
    pub(super) fn read(stored: &str) -> Result<Self, Error> {
        let record: Self = serde_json::from_str(stored)
            .map_err(|e| Error::internal(format!("a stored task does not read: {e}")))?;
        if record.format != FORMAT {
            return Err(Error::internal(format!(
                "a stored task has format {}, not {FORMAT}",
                record.format
            )));
        }
        Ok(record)
    }

    /// The record as the store keeps it, with its indexes.
    pub(super) fn stored(&self) -> Result<StoredTask, Error> {
        let record = serde_json::to_string(self)
            .map_err(|e| Error::internal(format!("writing a task: {e}")))?;
        Ok(StoredTask {
            record,
            owner: self.owner.clone(),
            expires_at: self.expires_at(),
            due_at: self.due_at(),
        })
    }

    /// When the task is forgotten.
    pub(super) fn expires_at(&self) -> Timestamp {
        self.created.add(TASK_TTL)
    }

    /// When a run is due for whoever finds it: for a working task, at its
    /// lease's end (now if nobody holds it); never for one waiting or ended.
    fn due_at(&self) -> Option<Timestamp> {
        (self.status == Status::Working)
            .then(|| self.lease.as_ref().map_or(self.updated, |l| l.until))
    }

    /// Whether `owner` may see the task.
    pub(super) fn is_owned_by(&self, owner: &str) -> bool {
        self.owner == owner
    }

    /// `tasks/update`: takes the answers to outstanding questions (others are
    /// ignored); `true` when none is left, and the next run is due, reserved
    /// for the instance that took the last answer (`reserve`).
    pub(super) fn answer(
        &mut self,
        responses: &Map<String, Value>,
        now: Timestamp,
        reserve: Lease,
    ) -> Change<bool> {
        if self.status != Status::InputRequired {
            return Change::Keep(false);
        }
        let mut took = false;
        for (key, answer) in responses {
            if self.outstanding.remove(key).is_some() {
                let asked = self.asked.get(key).and_then(Value::as_str).unwrap_or(key);
                self.answers.insert(asked.to_owned(), answer.clone());
                took = true;
            }
        }
        if !took {
            return Change::Keep(false);
        }
        self.updated = now;
        if !self.outstanding.is_empty() {
            return Change::Write(false);
        }
        self.status = Status::Working;
        self.lease = Some(reserve);
        Change::Write(true)
    }

    /// `tasks/cancel`: a task not ended is cancelled (its runner sees it when
    /// it next renews its lease).
    pub(super) fn cancel(&mut self, now: Timestamp) -> Change<()> {
        if self.status.is_terminal() {
            return Change::Keep(());
        }
        self.status = Status::Cancelled;
        self.updated = now;
        self.outstanding.clear();
        self.answers.clear();
        self.request_state = None;
        self.lease = None;
        Change::Write(())
    }

    /// Takes the lease for `holder` until `until`, if the task is working and
    /// nobody else holds a lease that lasts past `now` (the holder's own
    /// reservation is taken up): then the params of the run.
    pub(super) fn acquire(
        &mut self,
        holder: &str,
        now: Timestamp,
        until: Timestamp,
    ) -> Change<Option<Value>> {
        let held = self
            .lease
            .as_ref()
            .is_some_and(|l| l.until > now && l.holder != holder);
        if self.status != Status::Working || held || now >= self.expires_at() {
            return Change::Keep(None);
        }
        self.lease = Some(Lease {
            holder: holder.to_owned(),
            until,
        });
        let mut params = self.params.clone();
        if let Some(s) = &self.request_state {
            params.insert("requestState".into(), s.as_str().into());
        }
        if !self.answers.is_empty() {
            params.insert("inputResponses".into(), Value::Object(self.answers.clone()));
        }
        Change::Write(Some(Value::Object(params)))
    }

    /// Renews `holder`'s lease until `until`: `false` when it is no longer
    /// theirs to hold (the task was cancelled or another runner took it over).
    pub(super) fn renew(&mut self, holder: &str, until: Timestamp) -> Change<bool> {
        match &mut self.lease {
            Some(l) if l.holder == holder && self.status == Status::Working => {
                l.until = until;
                Change::Write(true)
            }
            _ => Change::Keep(false),
        }
    }

    /// Records how `holder`'s run ended (`None`: it was stopped at the task's
    /// deadline), unless the lease is no longer theirs.
    pub(super) fn finish(
        &mut self,
        holder: &str,
        outcome: Option<Outcome>,
        now: Timestamp,
    ) -> Change<()> {
        let theirs = self.lease.as_ref().is_some_and(|l| l.holder == holder);
        if !theirs || self.status != Status::Working {
            return Change::Keep(());
        }
        self.lease = None;
        self.updated = now;
        self.answers.clear();
        match outcome {
            Some(Outcome::InputRequired(irr)) => {
                self.status = Status::InputRequired;
                self.request_state = irr.request_state().map(str::to_owned);
                self.outstanding = Map::new();
                for (key, request) in irr.input_requests().into_iter().flatten() {
                    let shown = self.fresh_key(key);
                    self.asked.insert(shown.clone(), key.as_str().into());
                    self.outstanding.insert(shown, request.to_value());
                }
            }
            Some(Outcome::Complete(mut v) | Outcome::ToolError { result: mut v, .. }) => {
                if let Value::Object(o) = &mut v {
                    o.remove("resultType");
                }
                self.status = Status::Completed;
                self.request_state = None;
                self.result = Some(v);
            }
            Some(Outcome::Protocol(e)) => self.fail(&e),
            None => self.fail(&Error::internal("the task ran past its time to live")),
        }
        Change::Write(())
    }

    /// The key the client is asked the handler's `key` under: itself the
    /// first time, then `key~2`, `key~3`... (the first not asked before).
    fn fresh_key(&self, key: &str) -> String {
        if !self.asked.contains_key(key) {
            return key.to_owned();
        }
        (2..)
            .map(|n| format!("{key}~{n}"))
            .find(|k| !self.asked.contains_key(k))
            .unwrap_or_else(|| key.to_owned())
    }

    fn fail(&mut self, e: &Error) {
        self.status = Status::Failed;
        self.request_state = None;
        self.message = Some(e.public_message().to_owned());
        self.error = Some(e.to_jsonrpc(None)["error"].clone());
    }

    /// The fields of the task itself (`Task`): what a `CreateTaskResult` is
    /// made of.
    pub(super) fn fields(&self, id: &str) -> Map<String, Value> {
        let mut o = Map::new();
        o.insert("taskId".into(), id.into());
        o.insert("status".into(), self.status.as_str().into());
        if let Some(m) = &self.message {
            o.insert("statusMessage".into(), m.as_str().into());
        }
        o.insert("createdAt".into(), iso8601(self.created).into());
        o.insert("lastUpdatedAt".into(), iso8601(self.updated).into());
        o.insert("ttlMs".into(), millis(TASK_TTL).into());
        o.insert("pollIntervalMs".into(), millis(TASK_POLL_INTERVAL).into());
        o
    }

    /// `DetailedTask`: the task, with its outstanding questions, its result or
    /// its error as its status has them.
    pub(super) fn detailed(&self, id: &str) -> Map<String, Value> {
        let mut o = self.fields(id);
        match self.status {
            Status::InputRequired => {
                o.insert(
                    "inputRequests".into(),
                    Value::Object(self.outstanding.clone()),
                );
            }
            Status::Completed => {
                if let Some(r) = &self.result {
                    o.insert("result".into(), r.clone());
                }
            }
            Status::Failed => {
                if let Some(e) = &self.error {
                    o.insert("error".into(), e.clone());
                }
            }
            Status::Working | Status::Cancelled => {}
        }
        o
    }
}

fn millis(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// `t` as an RFC 3339 UTC date-time, `YYYY-MM-DDTHH:MM:SSZ`.
pub(super) fn iso8601(t: Timestamp) -> String {
    let secs = t.unix_secs();
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    let rem = secs % 86_400;
    // Civil from days (H. Hinnant's algorithm), for the proleptic Gregorian calendar.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3_600,
        rem % 3_600 / 60,
        rem % 60
    )
}

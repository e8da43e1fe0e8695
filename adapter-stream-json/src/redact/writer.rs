//! [`Redacted`](super::Redacted)'s writer: any `Serialize` type straight to JSON bytes, redacted
//! and with the keys of every object sorted, without building a `serde_json::Value` first.
//!
//! It is serde_json's own serializer with a [`Formatter`] that writes into the line itself
//! (the serializer's writer is a sink): serde_json decides what every value is and how it is
//! escaped, the formatter sees each piece and writes exactly what `serde_json::to_value`,
//! [`super::redact_in_place`] and `serde_json::to_writer` write in turn (the tests compare the
//! two on every line kind):
//!
//! - every string value is written as serde_json escapes it, then checked in place
//!   ([`super::may_hold_secret`] of its escaped bytes): one that may hold a secret is read
//!   back, passed through [`redact_string`] and written again when that changed it (keys are
//!   checked, not redacted);
//! - an entry whose key [`is_sensitive_key`] gets the string `"[REDACTED]"` as its value, and
//!   its value's pieces are dropped;
//! - an object's entries are written as they come, each entry's start noted; when the keys did
//!   not come in byte order, the object's bytes are put in key order at its end (one copy of
//!   the object; a repeated key keeps its last value, as a map would);
//! - what `to_value` treats specially (serde_json's raw values and arbitrary-precision
//!   numbers, 128-bit integers) stops the writer with [`WriteError::NotPlain`], and the caller
//!   takes the `Value` path instead.

use std::cell::Cell;
use std::fmt::{self, Display};
use std::io;

use serde::Serialize;
use serde_json::ser::{CharEscape, CompactFormatter, Formatter};

use super::{is_sensitive_key, may_hold_secret_bytes, redact_string, REDACTED};

/// Why the writer stopped.
#[derive(Debug)]
pub(crate) enum WriteError {
    /// The value's own `Serialize` failed.
    Custom(String),
    /// The value needs `serde_json::to_value`'s special handling: take the `Value` path.
    NotPlain,
}

impl Display for WriteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Custom(msg) => f.write_str(msg),
            Self::NotPlain => f.write_str("not a plain value"),
        }
    }
}

impl std::error::Error for WriteError {}

/// Appends `value` to `out` as redacted JSON with sorted keys; on error `out` may hold part
/// of it (the caller truncates).
pub(crate) fn write<T: Serialize + ?Sized>(value: &T, out: &mut Vec<u8>) -> Result<(), WriteError> {
    let mut line = Line {
        out,
        work: WORK.take(),
        skip: 0,
        string_start: 0,
        in_key: false,
        key_escaped: false,
        sensitive: false,
        not_plain: false,
    };
    let result = value.serialize(&mut serde_json::Serializer::with_formatter(
        io::sink(),
        Redacting(&mut line),
    ));
    let Line {
        mut work,
        not_plain,
        ..
    } = line;
    if work.scratch.capacity() <= super::KEEP_CAPACITY {
        work.keys.clear();
        work.entries.clear();
        work.objects.clear();
        WORK.set(work);
    }
    match result {
        Ok(()) => Ok(()),
        Err(_) if not_plain => Err(WriteError::NotPlain),
        Err(err) => Err(WriteError::Custom(err.to_string())),
    }
}

thread_local! {
    /// The writer's working buffers, kept between lines (a nested writer finds them taken
    /// and starts empty ones).
    static WORK: Cell<Work> = const {
        Cell::new(Work {
            keys: String::new(),
            entries: Vec::new(),
            objects: Vec::new(),
            scratch: Vec::new(),
        })
    };
}

/// What a [`Line`] works in besides its output.
#[derive(Debug, Default)]
struct Work {
    /// The keys of the open objects' entries, one after the other.
    keys: String,
    /// The entries of the open objects, innermost last.
    entries: Vec<Entry>,
    /// The open objects, innermost last.
    objects: Vec<Object>,
    /// Where an unsorted object's bytes are copied while they are put in order.
    scratch: Vec<u8>,
}

/// One entry of an open object: its key (`keys[from..to]`) and where its `"key":value`
/// starts in the output (and, once the object is put in order, where it ends).
#[derive(Debug, Clone, Copy)]
struct Entry {
    from: usize,
    to: usize,
    /// The key's first eight bytes, zero-padded, big-endian: keys whose prefixes differ are
    /// in the order of their prefixes, so most comparisons are one of integers.
    prefix: u64,
    start: usize,
    end: usize,
}

/// The byte order of two keys, read from their [`Entry::prefix`] first.
fn key_order(keys: &str, a: &Entry, b: &Entry) -> std::cmp::Ordering {
    a.prefix
        .cmp(&b.prefix)
        .then_with(|| keys[a.from..a.to].cmp(&keys[b.from..b.to]))
}

/// [`Entry::prefix`] of `key`.
fn prefix(key: &str) -> u64 {
    let mut bytes = [0u8; 8];
    let n = key.len().min(8);
    bytes[..n].copy_from_slice(&key.as_bytes()[..n]);
    u64::from_be_bytes(bytes)
}

/// An open object: its entries are `entries[first_entry..]`, its bytes `out[start..]`.
#[derive(Debug, Clone, Copy)]
struct Object {
    start: usize,
    first_entry: usize,
    first_key: usize,
    /// The keys so far came in strictly increasing byte order.
    sorted: bool,
}

/// The line being written and where the writer is in it.
struct Line<'o> {
    out: &'o mut Vec<u8>,
    work: Work,
    /// Inside a sensitive key's value when > 0: its nesting depth + 1 (its pieces are dropped).
    skip: usize,
    /// Where the string value being written starts in the output.
    string_start: usize,
    /// Between `begin_object_key` and `end_object_key`: the pieces are the key's.
    in_key: bool,
    /// The key being read had a char escaped: it is escaped again when written.
    key_escaped: bool,
    /// The last key was sensitive: its value is `"[REDACTED]"`.
    sensitive: bool,
    /// Stopped at what `to_value` treats specially.
    not_plain: bool,
}

impl Line<'_> {
    /// Writes a scalar as serde_json does, into the key being read when in one.
    fn scalar(&mut self, write: impl FnOnce(&mut Vec<u8>) -> io::Result<()>) -> io::Result<()> {
        if self.skip > 0 {
            return Ok(());
        }
        if !self.in_key {
            return write(self.out);
        }
        // An integer (or other scalar) map key: serde_json writes it inside the key's quotes.
        let mut digits = Vec::new();
        write(&mut digits)?;
        self.work.keys.push_str(&String::from_utf8_lossy(&digits));
        Ok(())
    }

    fn stop(&mut self) -> io::Result<()> {
        self.not_plain = true;
        Err(io::Error::other("not a plain value"))
    }

    /// Puts the entries of the object ending at the output's end in key order.
    fn reorder(&mut self, object: Object) {
        let end = self.out.len();
        let Work {
            keys,
            entries,
            scratch,
            ..
        } = &mut self.work;
        let entries = &mut entries[object.first_entry..];
        // Each entry's bytes run to the comma before the next one (or to the object's end).
        for i in 0..entries.len() {
            entries[i].end = entries.get(i + 1).map_or(end, |next| next.start - 1);
        }
        // Stable, so of equal keys the last written is the last of its run: that one is kept.
        entries.sort_by(|a, b| key_order(keys, a, b));
        scratch.clear();
        scratch.extend_from_slice(&self.out[object.start..end]);
        self.out.truncate(object.start);
        let mut first = true;
        for (i, entry) in entries.iter().enumerate() {
            if entries
                .get(i + 1)
                .is_some_and(|next| key_order(keys, next, entry).is_eq())
            {
                continue;
            }
            if !std::mem::replace(&mut first, false) {
                self.out.push(b',');
            }
            self.out
                .extend_from_slice(&scratch[entry.start - object.start..entry.end - object.start]);
        }
    }
}

/// The char a JSON escape stands for.
fn unescaped(escape: &CharEscape) -> char {
    match escape {
        CharEscape::Quote => '"',
        CharEscape::ReverseSolidus => '\\',
        CharEscape::Solidus => '/',
        CharEscape::Backspace => '\u{8}',
        CharEscape::FormFeed => '\u{c}',
        CharEscape::LineFeed => '\n',
        CharEscape::CarriageReturn => '\r',
        CharEscape::Tab => '\t',
        CharEscape::AsciiControl(byte) => char::from(*byte),
    }
}

/// serde_json's [`Formatter`] over a [`Line`] (the serializer's own writer is a sink).
struct Redacting<'l, 'o>(&'l mut Line<'o>);

/// A scalar written as [`CompactFormatter`] writes it.
macro_rules! scalars {
    ($($method:ident: $ty:ty),* $(,)?) => {$(
        fn $method<W: ?Sized + io::Write>(&mut self, _: &mut W, value: $ty) -> io::Result<()> {
            self.0.scalar(|out| CompactFormatter.$method(out, value))
        }
    )*};
}

impl Formatter for Redacting<'_, '_> {
    scalars!(
        write_bool: bool,
        write_i8: i8,
        write_i16: i16,
        write_i32: i32,
        write_i64: i64,
        write_u8: u8,
        write_u16: u16,
        write_u32: u32,
        write_u64: u64,
        write_f64: f64,
    );

    fn write_null<W: ?Sized + io::Write>(&mut self, _: &mut W) -> io::Result<()> {
        self.0.scalar(|out| CompactFormatter.write_null(out))
    }

    /// A JSON value holds an f32 as the f64 it converts to.
    fn write_f32<W: ?Sized + io::Write>(&mut self, _: &mut W, value: f32) -> io::Result<()> {
        self.0
            .scalar(|out| CompactFormatter.write_f64(out, f64::from(value)))
    }

    fn write_i128<W: ?Sized + io::Write>(&mut self, _: &mut W, _: i128) -> io::Result<()> {
        self.0.stop()
    }

    fn write_u128<W: ?Sized + io::Write>(&mut self, _: &mut W, _: u128) -> io::Result<()> {
        self.0.stop()
    }

    fn write_number_str<W: ?Sized + io::Write>(&mut self, _: &mut W, _: &str) -> io::Result<()> {
        self.0.stop()
    }

    fn write_raw_fragment<W: ?Sized + io::Write>(&mut self, _: &mut W, _: &str) -> io::Result<()> {
        self.0.stop()
    }

    fn begin_string<W: ?Sized + io::Write>(&mut self, _: &mut W) -> io::Result<()> {
        let line = &mut *self.0;
        if line.skip == 0 && !line.in_key {
            line.string_start = line.out.len();
            line.out.push(b'"');
        }
        Ok(())
    }

    fn end_string<W: ?Sized + io::Write>(&mut self, _: &mut W) -> io::Result<()> {
        let line = &mut *self.0;
        if line.skip > 0 || line.in_key {
            return Ok(());
        }
        line.out.push(b'"');
        let json = &line.out[line.string_start..];
        if may_hold_secret_bytes(json) {
            let text: String = serde_json::from_slice(json).map_err(io::Error::other)?;
            let redacted = redact_string(&text);
            if redacted != text {
                line.out.truncate(line.string_start);
                serde_json::to_writer(&mut *line.out, &redacted).map_err(io::Error::other)?;
            }
        }
        Ok(())
    }

    fn write_string_fragment<W: ?Sized + io::Write>(
        &mut self,
        _: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        let line = &mut *self.0;
        match (line.skip > 0, line.in_key) {
            (true, _) => {}
            (false, true) => line.work.keys.push_str(fragment),
            (false, false) => line.out.extend_from_slice(fragment.as_bytes()),
        }
        Ok(())
    }

    fn write_char_escape<W: ?Sized + io::Write>(
        &mut self,
        _: &mut W,
        escape: CharEscape,
    ) -> io::Result<()> {
        let line = &mut *self.0;
        match (line.skip > 0, line.in_key) {
            (true, _) => Ok(()),
            (false, true) => {
                line.work.keys.push(unescaped(&escape));
                line.key_escaped = true;
                Ok(())
            }
            (false, false) => CompactFormatter.write_char_escape(line.out, escape),
        }
    }

    fn begin_array<W: ?Sized + io::Write>(&mut self, _: &mut W) -> io::Result<()> {
        let line = &mut *self.0;
        match line.skip {
            0 => line.out.push(b'['),
            _ => line.skip += 1,
        }
        Ok(())
    }

    fn end_array<W: ?Sized + io::Write>(&mut self, _: &mut W) -> io::Result<()> {
        let line = &mut *self.0;
        match line.skip {
            0 => line.out.push(b']'),
            _ => line.skip -= 1,
        }
        Ok(())
    }

    fn begin_array_value<W: ?Sized + io::Write>(
        &mut self,
        _: &mut W,
        first: bool,
    ) -> io::Result<()> {
        let line = &mut *self.0;
        if line.skip == 0 && !first {
            line.out.push(b',');
        }
        Ok(())
    }

    fn end_array_value<W: ?Sized + io::Write>(&mut self, _: &mut W) -> io::Result<()> {
        Ok(())
    }

    fn begin_object<W: ?Sized + io::Write>(&mut self, _: &mut W) -> io::Result<()> {
        let line = &mut *self.0;
        if line.skip > 0 {
            line.skip += 1;
            return Ok(());
        }
        line.out.push(b'{');
        line.work.objects.push(Object {
            start: line.out.len(),
            first_entry: line.work.entries.len(),
            first_key: line.work.keys.len(),
            sorted: true,
        });
        Ok(())
    }

    fn end_object<W: ?Sized + io::Write>(&mut self, _: &mut W) -> io::Result<()> {
        let line = &mut *self.0;
        if line.skip > 0 {
            line.skip -= 1;
            return Ok(());
        }
        if let Some(object) = line.work.objects.pop() {
            if !object.sorted {
                line.reorder(object);
            }
            line.work.entries.truncate(object.first_entry);
            line.work.keys.truncate(object.first_key);
        }
        line.out.push(b'}');
        Ok(())
    }

    /// Writes the comma, notes where the entry starts; the key's pieces follow.
    fn begin_object_key<W: ?Sized + io::Write>(
        &mut self,
        _: &mut W,
        first: bool,
    ) -> io::Result<()> {
        let line = &mut *self.0;
        if line.skip > 0 {
            return Ok(());
        }
        if !first {
            line.out.push(b',');
        }
        let from = line.work.keys.len();
        line.work.entries.push(Entry {
            from,
            to: from,
            prefix: 0,
            start: line.out.len(),
            end: 0,
        });
        line.in_key = true;
        line.key_escaped = false;
        Ok(())
    }

    /// Writes the key read, notes whether the keys are still in order and whether the key
    /// is sensitive.
    fn end_object_key<W: ?Sized + io::Write>(&mut self, _: &mut W) -> io::Result<()> {
        let line = &mut *self.0;
        if line.skip > 0 {
            return Ok(());
        }
        line.in_key = false;
        let Work {
            keys,
            entries,
            objects,
            ..
        } = &mut line.work;
        let to = keys.len();
        let Some((entry, earlier)) = entries.split_last_mut() else {
            return Ok(());
        };
        entry.to = to;
        let key = &keys[entry.from..to];
        entry.prefix = prefix(key);
        if let Some(object) = objects.last_mut() {
            let previous = earlier
                .last()
                .filter(|_| earlier.len() > object.first_entry);
            if previous.is_some_and(|p| key_order(keys, p, entry).is_ge()) {
                object.sorted = false;
            }
        }
        line.sensitive = is_sensitive_key(key);
        if line.key_escaped {
            return serde_json::to_writer(&mut *line.out, key).map_err(io::Error::other);
        }
        // Nothing in it was escaped: the key's pieces are its JSON text.
        line.out.push(b'"');
        line.out.extend_from_slice(key.as_bytes());
        line.out.push(b'"');
        Ok(())
    }

    fn begin_object_value<W: ?Sized + io::Write>(&mut self, _: &mut W) -> io::Result<()> {
        let line = &mut *self.0;
        if line.skip > 0 {
            return Ok(());
        }
        line.out.push(b':');
        if std::mem::take(&mut line.sensitive) {
            serde_json::to_writer(&mut *line.out, REDACTED).map_err(io::Error::other)?;
            line.skip = 1;
        }
        Ok(())
    }

    fn end_object_value<W: ?Sized + io::Write>(&mut self, _: &mut W) -> io::Result<()> {
        let line = &mut *self.0;
        if line.skip == 1 {
            line.skip = 0;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;

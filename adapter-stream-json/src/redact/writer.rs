//! [`Redacted`](super::Redacted)'s writer: any `Serialize` type straight to JSON bytes, redacted
//! and with the keys of every object sorted, without building a `serde_json::Value` first.
//!
//! It writes exactly what `serde_json::to_value`, [`super::redact_in_place`] and
//! `serde_json::to_writer` write in turn (the tests compare the two on every line kind):
//!
//! - every string value passes through [`redact_str`] (keys are checked, not redacted);
//! - an entry whose key [`is_sensitive_key`] gets the string `"[REDACTED]"` as its value,
//!   and its value is not serialised at all;
//! - an object's entries are written as they come, each entry's start noted; when the keys did
//!   not come in byte order, the object's bytes are put in key order at its end (one copy of
//!   the object; a repeated key keeps its last value, as a map would);
//! - what `to_value` treats specially (serde_json's raw values and arbitrary-precision
//!   numbers, 128-bit integers, map keys that are not strings or integers) stops the writer
//!   with [`WriteError::NotPlain`], and the caller takes the `Value` path instead.

use std::cell::Cell;
use std::fmt::{self, Display};

use serde::ser::{self, Impossible, Serialize, Serializer};

use super::{is_sensitive_key, redact_str, REDACTED};

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

impl ser::Error for WriteError {
    fn custom<T: Display>(msg: T) -> Self {
        Self::Custom(msg.to_string())
    }
}

type Result<T = ()> = std::result::Result<T, WriteError>;

/// Appends `value` to `out` as redacted JSON with sorted keys; on error `out` may hold part
/// of it (the caller truncates).
pub(crate) fn write<T: Serialize + ?Sized>(value: &T, out: &mut Vec<u8>) -> Result {
    let mut writer = Writer {
        out,
        work: WORK.take(),
    };
    let result = value.serialize(&mut writer);
    let mut work = writer.work;
    if work.scratch.capacity() <= super::KEEP_CAPACITY {
        work.keys.clear();
        work.entries.clear();
        WORK.set(work);
    }
    result
}

thread_local! {
    /// The writer's working buffers, kept between lines (a nested writer finds them taken
    /// and starts empty ones).
    static WORK: Cell<Work> = const {
        Cell::new(Work {
            keys: String::new(),
            entries: Vec::new(),
            scratch: Vec::new(),
        })
    };
}

/// What a [`Writer`] works in besides its output.
#[derive(Debug, Default)]
struct Work {
    /// The copied map keys of the open objects.
    keys: String,
    /// The entries of the open objects, innermost last.
    entries: Vec<Entry>,
    /// Where an unsorted object's bytes are copied while they are put in order.
    scratch: Vec<u8>,
}

/// An object key: a struct field's name, or a map key copied into [`Work::keys`].
#[derive(Debug, Clone, Copy)]
enum Key {
    Static(&'static str),
    Copied(usize, usize),
}

/// One entry of an open object: its key and where its `"key":value` starts in the output
/// (and, once the object is put in order, where it ends).
#[derive(Debug, Clone, Copy)]
struct Entry {
    key: Key,
    start: usize,
    end: usize,
}

struct Writer<'o> {
    out: &'o mut Vec<u8>,
    work: Work,
}

impl Writer<'_> {
    fn key_str(&self, key: Key) -> &str {
        match key {
            Key::Static(s) => s,
            Key::Copied(from, to) => &self.work.keys[from..to],
        }
    }

    /// A JSON string, escaped as serde_json escapes it (`s` is already redacted or a key).
    fn string(&mut self, s: &str) -> Result {
        serde_json::to_writer(&mut *self.out, s).map_err(|e| WriteError::Custom(e.to_string()))
    }

    /// A number or other scalar, as serde_json writes it.
    fn scalar<T: Serialize>(&mut self, value: T) -> Result {
        serde_json::to_writer(&mut *self.out, &value).map_err(|e| WriteError::Custom(e.to_string()))
    }

    fn open(&mut self) -> Object {
        self.out.push(b'{');
        Object {
            start: self.out.len(),
            first_entry: self.work.entries.len(),
            first_key: self.work.keys.len(),
            sorted: true,
            redact_value: false,
        }
    }

    /// `{"variant":` of an externally tagged variant: an object of one entry.
    fn open_variant(&mut self, variant: &'static str) -> Result<Object> {
        let mut object = self.open();
        object.key(self, Key::Static(variant))?;
        Ok(object)
    }
}

/// An open object: its entries are `entries[first_entry..]`, its bytes `out[start..]`.
struct Object {
    start: usize,
    first_entry: usize,
    first_key: usize,
    /// The keys so far came in strictly increasing byte order.
    sorted: bool,
    /// The pending value is a sensitive key's: write `"[REDACTED]"` instead.
    redact_value: bool,
}

impl Object {
    /// Writes `,"key":` and notes the entry; the value follows.
    fn key(&mut self, w: &mut Writer<'_>, key: Key) -> Result {
        if w.work.entries.len() > self.first_entry {
            w.out.push(b',');
        }
        if let Some(last) = w
            .work
            .entries
            .last()
            .filter(|_| w.work.entries.len() > self.first_entry)
        {
            if w.key_str(last.key) >= w.key_str(key) {
                self.sorted = false;
            }
        }
        w.work.entries.push(Entry {
            key,
            start: w.out.len(),
            end: 0,
        });
        let name = match key {
            Key::Static(s) => s,
            Key::Copied(from, to) => &w.work.keys[from..to],
        };
        let written = serde_json::to_writer(&mut *w.out, name);
        self.redact_value = is_sensitive_key(name);
        written.map_err(|e| WriteError::Custom(e.to_string()))?;
        w.out.push(b':');
        Ok(())
    }

    fn value<T: Serialize + ?Sized>(&mut self, w: &mut Writer<'_>, value: &T) -> Result {
        match std::mem::take(&mut self.redact_value) {
            true => w.string(REDACTED),
            false => value.serialize(&mut *w),
        }
    }

    /// Closes the object, putting its entries in key order when they did not come in it.
    fn end(self, w: &mut Writer<'_>) -> Result {
        if !self.sorted {
            self.reorder(w);
        }
        w.work.entries.truncate(self.first_entry);
        w.work.keys.truncate(self.first_key);
        w.out.push(b'}');
        Ok(())
    }

    fn reorder(&self, w: &mut Writer<'_>) {
        let end = w.out.len();
        let entries = &mut w.work.entries[self.first_entry..];
        // Each entry's bytes run to the comma before the next one (or to the object's end).
        for i in 0..entries.len() {
            entries[i].end = entries.get(i + 1).map_or(end, |next| next.start - 1);
        }
        let keys = &w.work.keys;
        let name = |key: Key| match key {
            Key::Static(s) => s,
            Key::Copied(from, to) => &keys[from..to],
        };
        // Stable, so of equal keys the last written is the last of its run: that one is kept.
        entries.sort_by(|a, b| name(a.key).cmp(name(b.key)));
        w.work.scratch.clear();
        w.work.scratch.extend_from_slice(&w.out[self.start..end]);
        w.out.truncate(self.start);
        let mut first = true;
        for (i, entry) in entries.iter().enumerate() {
            if entries
                .get(i + 1)
                .is_some_and(|next| name(next.key) == name(entry.key))
            {
                continue;
            }
            if !first {
                w.out.push(b',');
            }
            first = false;
            w.out.extend_from_slice(
                &w.work.scratch[entry.start - self.start..entry.end - self.start],
            );
        }
    }
}

/// A sequence being written: whether an element was written yet.
struct Seq {
    empty: bool,
}

impl Seq {
    fn element<T: Serialize + ?Sized>(&mut self, w: &mut Writer<'_>, value: &T) -> Result {
        if !std::mem::replace(&mut self.empty, false) {
            w.out.push(b',');
        }
        value.serialize(&mut *w)
    }
}

impl<'a, 'o> Serializer for &'a mut Writer<'o> {
    type Ok = ();
    type Error = WriteError;
    type SerializeSeq = SeqWriter<'a, 'o>;
    type SerializeTuple = SeqWriter<'a, 'o>;
    type SerializeTupleStruct = SeqWriter<'a, 'o>;
    type SerializeTupleVariant = VariantSeqWriter<'a, 'o>;
    type SerializeMap = MapWriter<'a, 'o>;
    type SerializeStruct = MapWriter<'a, 'o>;
    type SerializeStructVariant = VariantMapWriter<'a, 'o>;

    fn serialize_bool(self, v: bool) -> Result {
        self.out
            .extend_from_slice(if v { b"true" } else { b"false" });
        Ok(())
    }
    fn serialize_i8(self, v: i8) -> Result {
        self.scalar(v)
    }
    fn serialize_i16(self, v: i16) -> Result {
        self.scalar(v)
    }
    fn serialize_i32(self, v: i32) -> Result {
        self.scalar(v)
    }
    fn serialize_i64(self, v: i64) -> Result {
        self.scalar(v)
    }
    fn serialize_i128(self, _: i128) -> Result {
        Err(WriteError::NotPlain)
    }
    fn serialize_u8(self, v: u8) -> Result {
        self.scalar(v)
    }
    fn serialize_u16(self, v: u16) -> Result {
        self.scalar(v)
    }
    fn serialize_u32(self, v: u32) -> Result {
        self.scalar(v)
    }
    fn serialize_u64(self, v: u64) -> Result {
        self.scalar(v)
    }
    fn serialize_u128(self, _: u128) -> Result {
        Err(WriteError::NotPlain)
    }
    fn serialize_f32(self, v: f32) -> Result {
        // A JSON value holds an f32 as the f64 it converts to.
        self.scalar(f64::from(v))
    }
    fn serialize_f64(self, v: f64) -> Result {
        self.scalar(v)
    }
    fn serialize_char(self, v: char) -> Result {
        self.serialize_str(v.encode_utf8(&mut [0; 4]))
    }
    fn serialize_str(self, v: &str) -> Result {
        let v = redact_str(v);
        self.string(&v)
    }
    fn serialize_bytes(self, v: &[u8]) -> Result {
        let mut seq = Seq { empty: true };
        self.out.push(b'[');
        for b in v {
            seq.element(self, b)?;
        }
        self.out.push(b']');
        Ok(())
    }
    fn serialize_none(self) -> Result {
        self.serialize_unit()
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result {
        self.out.extend_from_slice(b"null");
        Ok(())
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result {
        self.serialize_unit()
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, variant: &'static str) -> Result {
        self.serialize_str(variant)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _: &'static str, value: &T) -> Result {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        value: &T,
    ) -> Result {
        let mut object = self.open_variant(variant)?;
        object.value(self, value)?;
        object.end(self)
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<SeqWriter<'a, 'o>> {
        self.out.push(b'[');
        Ok(SeqWriter {
            w: self,
            seq: Seq { empty: true },
        })
    }
    fn serialize_tuple(self, len: usize) -> Result<SeqWriter<'a, 'o>> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_struct(self, _: &'static str, len: usize) -> Result<SeqWriter<'a, 'o>> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<VariantSeqWriter<'a, 'o>> {
        let object = self.open_variant(variant)?;
        // A sensitive variant name: its value is the one string.
        let redact = object.redact_value;
        if redact {
            self.string(REDACTED)?;
        } else {
            self.out.push(b'[');
        }
        Ok(VariantSeqWriter {
            w: self,
            object,
            seq: Seq { empty: true },
            redact,
        })
    }
    fn serialize_map(self, _: Option<usize>) -> Result<MapWriter<'a, 'o>> {
        let object = self.open();
        Ok(MapWriter { w: self, object })
    }
    fn serialize_struct(self, name: &'static str, _: usize) -> Result<MapWriter<'a, 'o>> {
        // serde_json's raw values and arbitrary-precision numbers are structs by these names.
        if name.starts_with("$serde_json::") {
            return Err(WriteError::NotPlain);
        }
        self.serialize_map(None)
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<VariantMapWriter<'a, 'o>> {
        let outer = self.open_variant(variant)?;
        let redact = outer.redact_value;
        let inner = match redact {
            true => {
                self.string(REDACTED)?;
                None
            }
            false => Some(self.open()),
        };
        Ok(VariantMapWriter {
            w: self,
            outer,
            inner,
        })
    }
}

/// A sequence, tuple or tuple struct.
pub(crate) struct SeqWriter<'a, 'o> {
    w: &'a mut Writer<'o>,
    seq: Seq,
}

impl SeqWriter<'_, '_> {
    fn element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result {
        self.seq.element(self.w, value)
    }
    fn close(self) -> Result {
        self.w.out.push(b']');
        Ok(())
    }
}

impl ser::SerializeSeq for SeqWriter<'_, '_> {
    type Ok = ();
    type Error = WriteError;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result {
        self.element(value)
    }
    fn end(self) -> Result {
        self.close()
    }
}

impl ser::SerializeTuple for SeqWriter<'_, '_> {
    type Ok = ();
    type Error = WriteError;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result {
        self.element(value)
    }
    fn end(self) -> Result {
        self.close()
    }
}

impl ser::SerializeTupleStruct for SeqWriter<'_, '_> {
    type Ok = ();
    type Error = WriteError;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result {
        self.element(value)
    }
    fn end(self) -> Result {
        self.close()
    }
}

/// `{"variant":[…]}`.
pub(crate) struct VariantSeqWriter<'a, 'o> {
    w: &'a mut Writer<'o>,
    object: Object,
    seq: Seq,
    /// The variant name is a sensitive key: its value was written as `"[REDACTED]"`.
    redact: bool,
}

impl ser::SerializeTupleVariant for VariantSeqWriter<'_, '_> {
    type Ok = ();
    type Error = WriteError;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result {
        match self.redact {
            true => Ok(()),
            false => self.seq.element(self.w, value),
        }
    }
    fn end(self) -> Result {
        if !self.redact {
            self.w.out.push(b']');
        }
        self.object.end(self.w)
    }
}

/// A map or struct.
pub(crate) struct MapWriter<'a, 'o> {
    w: &'a mut Writer<'o>,
    object: Object,
}

impl ser::SerializeMap for MapWriter<'_, '_> {
    type Ok = ();
    type Error = WriteError;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result {
        let from = self.w.work.keys.len();
        key.serialize(KeyWriter(&mut self.w.work.keys))?;
        let to = self.w.work.keys.len();
        self.object.key(self.w, Key::Copied(from, to))
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result {
        self.object.value(self.w, value)
    }
    fn end(self) -> Result {
        self.object.end(self.w)
    }
}

impl ser::SerializeStruct for MapWriter<'_, '_> {
    type Ok = ();
    type Error = WriteError;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, key: &'static str, value: &T) -> Result {
        self.object.key(self.w, Key::Static(key))?;
        self.object.value(self.w, value)
    }
    fn end(self) -> Result {
        self.object.end(self.w)
    }
}

/// `{"variant":{…}}`.
pub(crate) struct VariantMapWriter<'a, 'o> {
    w: &'a mut Writer<'o>,
    outer: Object,
    /// The variant's own object; `None` when the variant name is a sensitive key.
    inner: Option<Object>,
}

impl ser::SerializeStructVariant for VariantMapWriter<'_, '_> {
    type Ok = ();
    type Error = WriteError;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, key: &'static str, value: &T) -> Result {
        match &mut self.inner {
            Some(inner) => {
                inner.key(self.w, Key::Static(key))?;
                inner.value(self.w, value)
            }
            None => Ok(()),
        }
    }
    fn end(self) -> Result {
        if let Some(inner) = self.inner {
            inner.end(self.w)?;
        }
        self.outer.end(self.w)
    }
}

/// Writes a map key into the key arena, as `serde_json::to_value` turns keys into strings.
struct KeyWriter<'k>(&'k mut String);

impl KeyWriter<'_> {
    fn push(self, s: &str) -> Result {
        self.0.push_str(s);
        Ok(())
    }
    fn int(self, n: impl Display) -> Result {
        use std::fmt::Write;
        // Writing to a String cannot fail.
        let _ = write!(self.0, "{n}");
        Ok(())
    }
}

macro_rules! not_plain {
    ($($method:ident($($ty:ty),*);)*) => {
        $(fn $method(self, $(_: $ty),*) -> Result {
            Err(WriteError::NotPlain)
        })*
    };
}

impl Serializer for KeyWriter<'_> {
    type Ok = ();
    type Error = WriteError;
    type SerializeSeq = Impossible<(), WriteError>;
    type SerializeTuple = Impossible<(), WriteError>;
    type SerializeTupleStruct = Impossible<(), WriteError>;
    type SerializeTupleVariant = Impossible<(), WriteError>;
    type SerializeMap = Impossible<(), WriteError>;
    type SerializeStruct = Impossible<(), WriteError>;
    type SerializeStructVariant = Impossible<(), WriteError>;

    fn serialize_str(self, v: &str) -> Result {
        self.push(v)
    }
    fn serialize_char(self, v: char) -> Result {
        self.push(v.encode_utf8(&mut [0; 4]))
    }
    fn serialize_bool(self, v: bool) -> Result {
        self.push(if v { "true" } else { "false" })
    }
    fn serialize_i8(self, v: i8) -> Result {
        self.int(v)
    }
    fn serialize_i16(self, v: i16) -> Result {
        self.int(v)
    }
    fn serialize_i32(self, v: i32) -> Result {
        self.int(v)
    }
    fn serialize_i64(self, v: i64) -> Result {
        self.int(v)
    }
    fn serialize_u8(self, v: u8) -> Result {
        self.int(v)
    }
    fn serialize_u16(self, v: u16) -> Result {
        self.int(v)
    }
    fn serialize_u32(self, v: u32) -> Result {
        self.int(v)
    }
    fn serialize_u64(self, v: u64) -> Result {
        self.int(v)
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, variant: &'static str) -> Result {
        self.push(variant)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _: &'static str, value: &T) -> Result {
        value.serialize(self)
    }

    not_plain! {
        serialize_i128(i128);
        serialize_u128(u128);
        serialize_f32(f32);
        serialize_f64(f64);
        serialize_bytes(&[u8]);
        serialize_none();
        serialize_unit();
        serialize_unit_struct(&'static str);
    }

    fn serialize_some<T: Serialize + ?Sized>(self, _: &T) -> Result {
        Err(WriteError::NotPlain)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result {
        Err(WriteError::NotPlain)
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq> {
        Err(WriteError::NotPlain)
    }
    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple> {
        Err(WriteError::NotPlain)
    }
    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct> {
        Err(WriteError::NotPlain)
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant> {
        Err(WriteError::NotPlain)
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap> {
        Err(WriteError::NotPlain)
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeStruct> {
        Err(WriteError::NotPlain)
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant> {
        Err(WriteError::NotPlain)
    }
}

#[cfg(test)]
mod tests;

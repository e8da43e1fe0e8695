//! [`Line`]: the envelope and an [`EventBody`], serialised as one object whose keys come in
//! byte order when the body's fields are declared in it.
//!
//! Zero's lines have sorted keys, and [`crate::redact::Redacted`] sorts whatever it is given.
//! A line written as a flattened struct would reach it as `runId`, `schemaVersion`, `type`
//! and then the body's fields: out of order on every line, so every line would be sorted and
//! copied again. [`Line`]'s `Serialize` instead merges the three envelope keys into the
//! body's fields as they go by, and the writer finds nothing to sort (it still sorts a body
//! whose fields are not in order, so the field order stays free for correctness).

use serde::ser::{Impossible, SerializeMap, SerializeStruct};
use serde::{Serialize, Serializer};

use super::EventBody;

/// A whole stream-json line before redaction: the envelope of run `run_id` and `body` (whose
/// variant gives `type`). Written through [`crate::redact::Redacted`].
#[derive(Debug)]
pub(crate) struct Line<'a> {
    /// The run id.
    pub run_id: &'a str,
    /// [`super::SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The event's fields.
    pub body: &'a EventBody,
}

impl Serialize for Line<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        let mut fields = Fields {
            map: &mut map,
            envelope: Envelope {
                line: self,
                written: 0,
            },
            first: true,
        };
        self.body.serialize(&mut fields)?;
        fields.envelope.write_before(fields.map, None)?;
        map.end()
    }
}

/// The envelope's entries, in key order, and how many of them are written.
struct Envelope<'l, 'a> {
    line: &'l Line<'a>,
    written: usize,
}

impl Envelope<'_, '_> {
    /// The envelope's keys, in byte order.
    const KEYS: [&'static str; 3] = ["runId", "schemaVersion", "type"];

    /// Writes the entries not yet written whose keys sort before `key` (all of them for
    /// `None`). Called for every field: most calls are done with after one byte.
    #[inline]
    fn write_before<M: SerializeMap>(
        &mut self,
        map: &mut M,
        key: Option<&str>,
    ) -> Result<(), M::Error> {
        while let Some(&next) = Self::KEYS.get(self.written) {
            if key.is_some_and(|key| at_or_before(key, next)) {
                break;
            }
            match self.written {
                0 => map.serialize_entry(next, self.line.run_id)?,
                1 => map.serialize_entry(next, &self.line.schema_version)?,
                _ => map.serialize_entry(next, self.line.body.type_name())?,
            }
            self.written += 1;
        }
        Ok(())
    }
}

/// `a <= b` in byte order, decided by the first bytes when they differ (no `memcmp` call).
fn at_or_before(a: &str, b: &str) -> bool {
    match (a.as_bytes().first(), b.as_bytes().first()) {
        (Some(x), Some(y)) if x != y => x < y,
        _ => a <= b,
    }
}

/// The serializer a body is given: it takes the fields of the variant's struct (after the
/// tag, which the envelope writes) into the line's map, the envelope's keys merged in.
struct Fields<'m, 'l, 'a, M> {
    map: &'m mut M,
    envelope: Envelope<'l, 'a>,
    /// No field has come yet: the first is the tag.
    first: bool,
}

impl<M: SerializeMap> SerializeStruct for &mut Fields<'_, '_, '_, M> {
    type Ok = ();
    type Error = M::Error;

    fn serialize_field<T: ?Sized + Serialize>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), M::Error> {
        if std::mem::take(&mut self.first) && key == "type" {
            return Ok(());
        }
        self.envelope.write_before(self.map, Some(key))?;
        self.map.serialize_entry(key, value)
    }

    fn end(self) -> Result<(), M::Error> {
        Ok(())
    }
}

/// What a body that is not a struct gets: an error (every [`EventBody`] variant is one).
fn not_a_struct<E: serde::ser::Error>() -> E {
    E::custom("a stream-json event body serialises as a struct")
}

/// Refuses the scalar `serialize_*` methods.
macro_rules! refuse {
    ($($method:ident($($ty:ty),*)),* $(,)?) => {
        $(fn $method(self, $(_: $ty),*) -> Result<(), M::Error> {
            Err(not_a_struct())
        })*
    };
}

impl<M: SerializeMap> Serializer for &mut Fields<'_, '_, '_, M> {
    type Ok = ();
    type Error = M::Error;
    type SerializeSeq = Impossible<(), M::Error>;
    type SerializeTuple = Impossible<(), M::Error>;
    type SerializeTupleStruct = Impossible<(), M::Error>;
    type SerializeTupleVariant = Impossible<(), M::Error>;
    type SerializeMap = Impossible<(), M::Error>;
    type SerializeStruct = Self;
    type SerializeStructVariant = Impossible<(), M::Error>;

    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self, M::Error> {
        Ok(self)
    }

    refuse! {
        serialize_bool(bool), serialize_i8(i8), serialize_i16(i16), serialize_i32(i32),
        serialize_i64(i64), serialize_u8(u8), serialize_u16(u16), serialize_u32(u32),
        serialize_u64(u64), serialize_f32(f32), serialize_f64(f64), serialize_char(char),
        serialize_str(&str), serialize_bytes(&[u8]), serialize_none(), serialize_unit(),
        serialize_unit_struct(&'static str),
        serialize_unit_variant(&'static str, u32, &'static str),
    }

    fn serialize_some<T: ?Sized + Serialize>(self, _: &T) -> Result<(), M::Error> {
        Err(not_a_struct())
    }

    fn serialize_newtype_struct<T: ?Sized + Serialize>(
        self,
        _: &'static str,
        _: &T,
    ) -> Result<(), M::Error> {
        Err(not_a_struct())
    }

    fn serialize_newtype_variant<T: ?Sized + Serialize>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<(), M::Error> {
        Err(not_a_struct())
    }

    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, M::Error> {
        Err(not_a_struct())
    }

    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, M::Error> {
        Err(not_a_struct())
    }

    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct, M::Error> {
        Err(not_a_struct())
    }

    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, M::Error> {
        Err(not_a_struct())
    }

    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, M::Error> {
        Err(not_a_struct())
    }

    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, M::Error> {
        Err(not_a_struct())
    }
}

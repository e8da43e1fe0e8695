//! How Zero's lines are serialised: keys in byte order, as Go's encoder writes a map, and
//! protocol redaction applied field by field while serialising.
//!
//! - `Merged` writes a struct (or a variant of an internally tagged enum) as one JSON object
//!   with extra entries (the envelope: `runId`, `schemaVersion`, `type`) merged in at their
//!   sorted places. The struct's fields must be declared in byte order of their JSON names;
//!   the tests compare every line with a sorted reference.
//! - The `redacted*` functions are `serialize_with` helpers: string fields pass through
//!   [`redact_str`], and only the fields of unknown shape (tool arguments, grants, metadata
//!   maps) are walked as values, by [`RedactedValue`], which also checks their keys.

use std::collections::BTreeMap;

use serde::ser::{self, Impossible, Serialize, SerializeMap, SerializeStruct, Serializer};
use serde_json::Value;

use crate::redact::{is_sensitive_key, redact_str, REDACTED};

/// A scalar entry merged into a line.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Scalar<'a> {
    /// A string.
    Str(&'a str),
    /// A number.
    Int(i64),
}

impl Serialize for Scalar<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match *self {
            Self::Str(s) => serializer.serialize_str(s),
            Self::Int(n) => serializer.serialize_i64(n),
        }
    }
}

/// `body` as one JSON object with the `extra` entries (sorted by key) merged between its
/// fields, which must come in byte order. A body field whose key is also an extra key (the
/// enum's `type` tag) is left out: the extra entry stands in its place.
pub(crate) struct Merged<'a, T: ?Sized> {
    /// Entries to merge in, sorted by key.
    pub extra: &'a [(&'static str, Scalar<'a>)],
    /// The struct (or struct-like enum variant).
    pub body: &'a T,
}

impl<T: Serialize + ?Sized> Serialize for Merged<'_, T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        let mut fields = Fields {
            map: &mut map,
            extra: self.extra,
            next: 0,
        };
        self.body.serialize(&mut fields)?;
        let next = fields.next;
        for (key, value) in &self.extra[next..] {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

/// The serializer [`Merged`] runs the body through: it accepts one struct and writes its
/// fields into the outer map, extra entries first where they sort before a field.
struct Fields<'m, 'a, M> {
    map: &'m mut M,
    extra: &'a [(&'static str, Scalar<'a>)],
    next: usize,
}

impl<M: SerializeMap> Fields<'_, '_, M> {
    fn field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), M::Error> {
        if self.extra.iter().any(|(k, _)| *k == key) {
            return Ok(());
        }
        while let Some((k, v)) = self.extra.get(self.next) {
            if *k >= key {
                break;
            }
            self.map.serialize_entry(k, v)?;
            self.next += 1;
        }
        self.map.serialize_entry(key, value)
    }
}

fn not_a_struct<E: ser::Error>() -> E {
    E::custom("a Zero line must be a struct")
}

macro_rules! not_a_struct {
    ($($method:ident($($ty:ty),*);)*) => {
        $(fn $method(self, $(_: $ty),*) -> Result<Self::Ok, Self::Error> {
            Err(not_a_struct())
        })*
    };
}

impl<'s, 'm, 'a, M: SerializeMap> Serializer for &'s mut Fields<'m, 'a, M> {
    type Ok = ();
    type Error = M::Error;
    type SerializeSeq = Impossible<(), M::Error>;
    type SerializeTuple = Impossible<(), M::Error>;
    type SerializeTupleStruct = Impossible<(), M::Error>;
    type SerializeTupleVariant = Impossible<(), M::Error>;
    type SerializeMap = Impossible<(), M::Error>;
    type SerializeStruct = Self;
    type SerializeStructVariant = Impossible<(), M::Error>;

    not_a_struct! {
        serialize_bool(bool);
        serialize_i8(i8);
        serialize_i16(i16);
        serialize_i32(i32);
        serialize_i64(i64);
        serialize_u8(u8);
        serialize_u16(u16);
        serialize_u32(u32);
        serialize_u64(u64);
        serialize_f32(f32);
        serialize_f64(f64);
        serialize_char(char);
        serialize_str(&str);
        serialize_bytes(&[u8]);
        serialize_none();
        serialize_unit();
        serialize_unit_struct(&'static str);
        serialize_unit_variant(&'static str, u32, &'static str);
    }

    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), M::Error> {
        value.serialize(self)
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        value: &T,
    ) -> Result<(), M::Error> {
        value.serialize(self)
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
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

    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self, M::Error> {
        Ok(self)
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

impl<M: SerializeMap> SerializeStruct for &mut Fields<'_, '_, M> {
    type Ok = ();
    type Error = M::Error;

    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), M::Error> {
        self.field(key, value)
    }

    fn end(self) -> Result<(), M::Error> {
        Ok(())
    }
}

/// A JSON value of unknown shape, redacted while it is serialised: sensitive keys at any
/// depth get `"[REDACTED]"`, strings pass through [`redact_str`], and object keys come out
/// sorted whatever the map implementation.
pub struct RedactedValue<'a>(pub &'a Value);

impl Serialize for RedactedValue<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Value::String(s) => serializer.serialize_str(&redact_str(s)),
            Value::Array(items) => serializer.collect_seq(items.iter().map(RedactedValue)),
            Value::Object(object) => {
                let mut entries: Vec<(&String, &Value)> = object.iter().collect();
                if !entries.is_sorted_by(|a, b| a.0 <= b.0) {
                    entries.sort_by(|a, b| a.0.cmp(b.0));
                }
                let mut map = serializer.serialize_map(Some(entries.len()))?;
                for (key, item) in entries {
                    match is_sensitive_key(key) {
                        true => map.serialize_entry(key, REDACTED)?,
                        false => map.serialize_entry(key, &RedactedValue(item))?,
                    }
                }
                map.end()
            }
            other => other.serialize(serializer),
        }
    }
}

/// `serialize_with` for a free-text field: redacted.
pub(crate) fn redacted<S: Serializer>(value: &str, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(&redact_str(value))
}

/// `serialize_with` for an optional string (skipped when `None`): redacted.
pub(crate) fn redacted_some<S: Serializer>(
    value: &Option<String>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    match value {
        Some(value) => redacted(value, serializer),
        None => serializer.serialize_none(),
    }
}

/// `serialize_with` for a list of strings: each redacted.
pub(crate) fn redacted_list<S: Serializer>(
    values: &[String],
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.collect_seq(values.iter().map(|v| redact_str(v)))
}

/// `serialize_with` for an optional value of unknown shape: walked by [`RedactedValue`].
pub(crate) fn redacted_value<V: std::borrow::Borrow<Value>, S: Serializer>(
    value: &Option<V>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    match value {
        Some(value) => RedactedValue(value.borrow()).serialize(serializer),
        None => serializer.serialize_none(),
    }
}

/// `serialize_with` for a string map with keys of unknown shape: a sensitive key's value is
/// `"[REDACTED]"`, every other value is redacted as a string.
pub(crate) fn redacted_map<S: Serializer>(
    map: &BTreeMap<String, String>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.collect_map(map.iter().map(|(key, value)| {
        let value = match is_sensitive_key(key) {
            true => std::borrow::Cow::Borrowed(REDACTED),
            false => redact_str(value),
        };
        (key, value)
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Serialize;
    use serde_json::json;

    #[derive(Serialize)]
    #[serde(tag = "type", rename_all = "snake_case")]
    enum Body {
        Thing(Thing),
    }

    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Thing {
        alpha: u8,
        #[serde(skip_serializing_if = "Option::is_none")]
        middle: Option<u8>,
        sorted: &'static str,
        zeta: bool,
    }

    #[test]
    fn extras_are_merged_in_byte_order_and_the_tag_is_not_doubled() {
        let body = Body::Thing(Thing {
            alpha: 1,
            middle: None,
            sorted: "s",
            zeta: true,
        });
        let extra = [
            ("runId", Scalar::Str("r")),
            ("schemaVersion", Scalar::Int(2)),
            ("type", Scalar::Str("thing")),
        ];
        let line = serde_json::to_string(&Merged {
            extra: &extra,
            body: &body,
        })
        .expect("serialise");
        assert_eq!(
            line,
            r#"{"alpha":1,"runId":"r","schemaVersion":2,"sorted":"s","type":"thing","zeta":true}"#
        );
        // Extras after every field come last.
        let extra = [("zz", Scalar::Int(1))];
        let thing = Thing {
            alpha: 0,
            middle: Some(3),
            sorted: "",
            zeta: false,
        };
        let line = serde_json::to_string(&Merged {
            extra: &extra,
            body: &thing,
        })
        .expect("serialise");
        assert_eq!(
            line,
            r#"{"alpha":0,"middle":3,"sorted":"","zeta":false,"zz":1}"#
        );
        // Anything but a struct is an error, not a panic.
        assert!(serde_json::to_string(&Merged {
            extra: &extra,
            body: &5
        })
        .is_err());
    }

    #[test]
    fn values_of_unknown_shape_are_redacted_and_sorted() {
        let value = json!({"b": ["sk-abcdefghijklmnopqrstuv"], "a": {"api_key": 1, "n": 2}});
        assert_eq!(
            serde_json::to_string(&RedactedValue(&value)).expect("serialise"),
            r#"{"a":{"api_key":"[REDACTED]","n":2},"b":["[REDACTED]"]}"#
        );
        assert_eq!(
            serde_json::to_string(&RedactedValue(&value)).expect("serialise"),
            serde_json::to_string(&crate::redact::redact_value(value)).expect("serialise")
        );
    }
}

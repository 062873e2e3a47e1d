//! Every string a value serializes, collected without serializing it: the text
//! [`Redactor::redact_entry`](super::Redactor::redact_entry) looks for secret keywords in.
//!
//! The keyword check used to run over the entry's whole JSON line, which cost a second
//! serialization of every entry (JSON escaping, byte by byte) on top of the one that writes
//! it. This serializer visits the same values the line is made of (the same `Serialize`
//! impls, so a field added later is covered without anyone remembering to list it) and copies
//! each string's raw text, a newline between two. A keyword has no newline, so it can only be
//! found within one string, as in the line; and escaping touches only characters no keyword
//! holds, so a keyword is in a raw string exactly when it is in that string's JSON form.
//! Struct field names (fixed names in the code, not data) are left out; map keys are data
//! and are kept.

use std::fmt;

use serde::ser::{self, Serialize};

/// The raw text of every string (and map key) in `value`, one per line.
pub(super) fn collect(value: &impl Serialize) -> String {
    let mut out = Collector(String::new());
    // Collecting cannot fail: every method of the collector returns `Ok`.
    let _ = value.serialize(&mut out);
    out.0
}

/// The serializer: the text so far.
struct Collector(String);

impl Collector {
    fn push(&mut self, text: &str) {
        if !self.0.is_empty() {
            self.0.push('\n');
        }
        self.0.push_str(text);
    }
}

/// The collector never fails; serde needs an error type all the same.
#[derive(Debug)]
pub(super) struct Never;

impl fmt::Display for Never {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("collecting strings never fails")
    }
}

impl std::error::Error for Never {}

impl ser::Error for Never {
    fn custom<T: fmt::Display>(_: T) -> Never {
        Never
    }
}

/// Scalars that hold no text.
macro_rules! no_text {
    ($($method:ident: $type:ty),* $(,)?) => {
        $(fn $method(self, _: $type) -> Result<(), Never> {
            Ok(())
        })*
    };
}

impl ser::Serializer for &mut Collector {
    type Ok = ();
    type Error = Never;
    type SerializeSeq = Self;
    type SerializeTuple = Self;
    type SerializeTupleStruct = Self;
    type SerializeTupleVariant = Self;
    type SerializeMap = Self;
    type SerializeStruct = Self;
    type SerializeStructVariant = Self;

    no_text!(
        serialize_bool: bool,
        serialize_i8: i8,
        serialize_i16: i16,
        serialize_i32: i32,
        serialize_i64: i64,
        serialize_u8: u8,
        serialize_u16: u16,
        serialize_u32: u32,
        serialize_u64: u64,
        serialize_f32: f32,
        serialize_f64: f64,
        serialize_bytes: &[u8],
        serialize_unit_struct: &'static str,
    );

    fn serialize_char(self, c: char) -> Result<(), Never> {
        self.push(c.encode_utf8(&mut [0; 4]));
        Ok(())
    }

    fn serialize_str(self, text: &str) -> Result<(), Never> {
        self.push(text);
        Ok(())
    }

    fn serialize_none(self) -> Result<(), Never> {
        Ok(())
    }

    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), Never> {
        value.serialize(self)
    }

    fn serialize_unit(self) -> Result<(), Never> {
        Ok(())
    }

    fn serialize_unit_variant(self, _: &'static str, _: u32, _: &'static str) -> Result<(), Never> {
        Ok(())
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        value: &T,
    ) -> Result<(), Never> {
        value.serialize(self)
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        value: &T,
    ) -> Result<(), Never> {
        value.serialize(self)
    }

    fn serialize_seq(self, _: Option<usize>) -> Result<Self, Never> {
        Ok(self)
    }

    fn serialize_tuple(self, _: usize) -> Result<Self, Never> {
        Ok(self)
    }

    fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<Self, Never> {
        Ok(self)
    }

    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self, Never> {
        Ok(self)
    }

    fn serialize_map(self, _: Option<usize>) -> Result<Self, Never> {
        Ok(self)
    }

    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self, Never> {
        Ok(self)
    }

    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self, Never> {
        Ok(self)
    }
}

/// Elements of sequences and tuples of every kind: each one visited.
macro_rules! elements {
    ($($trait:ident :: $method:ident),* $(,)?) => {
        $(impl ser::$trait for &mut Collector {
            type Ok = ();
            type Error = Never;

            fn $method<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Never> {
                value.serialize(&mut **self)
            }

            fn end(self) -> Result<(), Never> {
                Ok(())
            }
        })*
    };
}

elements!(
    SerializeSeq::serialize_element,
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field,
    SerializeTupleVariant::serialize_field,
);

impl ser::SerializeMap for &mut Collector {
    type Ok = ();
    type Error = Never;

    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Never> {
        key.serialize(&mut **self)
    }

    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Never> {
        value.serialize(&mut **self)
    }

    fn end(self) -> Result<(), Never> {
        Ok(())
    }
}

/// Fields of structs: the value visited, the (fixed) name left out.
macro_rules! fields {
    ($($trait:ident),* $(,)?) => {
        $(impl ser::$trait for &mut Collector {
            type Ok = ();
            type Error = Never;

            fn serialize_field<T: Serialize + ?Sized>(
                &mut self,
                _: &'static str,
                value: &T,
            ) -> Result<(), Never> {
                value.serialize(&mut **self)
            }

            fn end(self) -> Result<(), Never> {
                Ok(())
            }
        })*
    };
}

fields!(SerializeStruct, SerializeStructVariant);

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn every_string_and_map_key_is_collected_raw_field_names_not() {
        #[derive(serde::Serialize)]
        struct Entry {
            prompt: Option<String>,
            count: u64,
            payload: serde_json::Value,
            calls: Vec<(String, char)>,
        }
        let entry = Entry {
            prompt: Some("line one\nBearer \"x\"".into()),
            count: 7,
            payload: json!({"AKIA key": ["sk-", 1, null, {"deep": "ghp_"}]}),
            calls: vec![("tool".into(), 'é')],
        };
        assert_eq!(
            collect(&entry),
            "line one\nBearer \"x\"\nAKIA key\nsk-\ndeep\nghp_\ntool\né"
        );
        assert_eq!(collect(&json!({"n": 1})), "n");
        assert_eq!(collect(&7), "");
    }
}

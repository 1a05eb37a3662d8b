//! The names kernel text uses for what the generator knows: the C type of each dtype
//! (the prelude's `typedef`s) and the placeholder for the kernel's own name.

use tessera_core::DType;

/// The placeholder for the kernel's name, replaced once the text's hash is known.
pub const NAME: &str = "@KERNEL@";

/// The C type of a dtype in kernel text.
pub fn ctype(d: DType) -> &'static str {
    match d {
        DType::Bool => "b8",
        DType::I8 => "i8",
        DType::I16 => "i16",
        DType::I32 => "i32",
        DType::I64 => "i64",
        DType::U8 => "u8",
        DType::U16 => "u16",
        DType::U32 => "u32",
        DType::U64 => "u64",
        DType::F32 => "f32",
        DType::F64 => "f64",
    }
}

//! Columns in device memory, in Arrow's own layout: each of an array's buffers (values,
//! offsets, the validity bitmap) is one device buffer holding exactly the host buffer's
//! bytes, with the array's offset kept beside them. So moving a batch to the device and
//! back is a copy of its buffers and nothing else (no conversion per value), a slice is a
//! new offset over the same buffers, and a kernel reads a column as Arrow defines it:
//! element `offset + i` of the values, bit `null_offset + i` of the bitmap.

use std::sync::Arc;

use arrow_buffer::{BooleanBuffer, Buffer, NullBuffer};
use arrow_data::ArrayData;
use arrow_schema::DataType;
use tessera_core::{Error, Result};

use tessera_cuda::device::Device;

/// One device buffer and how many of its bytes are the data's (a device buffer holds at
/// least one byte, even for empty data).
pub struct DeviceBytes<B> {
    /// The buffer.
    pub buf: Arc<B>,
    /// The data's length in bytes.
    pub len: usize,
}

impl<B> Clone for DeviceBytes<B> {
    fn clone(&self) -> Self {
        DeviceBytes {
            buf: self.buf.clone(),
            len: self.len,
        }
    }
}

/// A validity bitmap on the device: bit `offset + i` is row `i`'s (1 = valid).
pub struct DeviceNulls<B> {
    /// The bitmap's bytes.
    pub bytes: DeviceBytes<B>,
    /// The bit of row 0.
    pub offset: usize,
}

impl<B> Clone for DeviceNulls<B> {
    fn clone(&self) -> Self {
        DeviceNulls {
            bytes: self.bytes.clone(),
            offset: self.offset,
        }
    }
}

/// An Arrow array whose buffers live in one device's memory.
pub struct DeviceArray<B> {
    /// Its Arrow type.
    pub data_type: DataType,
    /// Rows.
    pub len: usize,
    /// The element of row 0 in the buffers (Arrow's array offset).
    pub offset: usize,
    /// The validity bitmap, when the array has one.
    pub nulls: Option<DeviceNulls<B>>,
    /// Arrow's buffers of this type, in Arrow's order.
    pub buffers: Vec<DeviceBytes<B>>,
    /// Arrow's child arrays (a dictionary's values, a list's items).
    pub children: Vec<DeviceArray<B>>,
}

impl<B> Clone for DeviceArray<B> {
    fn clone(&self) -> Self {
        DeviceArray {
            data_type: self.data_type.clone(),
            len: self.len,
            offset: self.offset,
            nulls: self.nulls.clone(),
            buffers: self.buffers.clone(),
            children: self.children.clone(),
        }
    }
}

impl<B> DeviceArray<B> {
    /// Bytes held on the device, children included.
    pub fn nbytes(&self) -> usize {
        self.buffers.iter().map(|b| b.len).sum::<usize>()
            + self.nulls.as_ref().map_or(0, |n| n.bytes.len)
            + self.children.iter().map(DeviceArray::nbytes).sum::<usize>()
    }

    /// Rows `offset .. offset + len` of this array: the same buffers, read from another
    /// offset (the caller keeps the range inside the array).
    pub fn slice(&self, offset: usize, len: usize) -> DeviceArray<B> {
        let mut out = self.clone();
        out.offset += offset;
        out.len = len;
        if let Some(n) = out.nulls.as_mut() {
            n.offset += offset;
        }
        out
    }
}

/// Copies `data`'s buffers (and its children's) to `device`.
///
/// # Errors
/// [`Error::Device`] when an upload fails.
pub fn upload<D: Device>(device: &D, data: &ArrayData) -> Result<DeviceArray<D::Buf>> {
    let bytes = |b: &Buffer| -> Result<DeviceBytes<D::Buf>> {
        Ok(DeviceBytes {
            buf: Arc::new(device.upload(b.as_slice())?),
            len: b.len(),
        })
    };
    let nulls = match data.nulls() {
        Some(n) => Some(DeviceNulls {
            bytes: bytes(n.buffer())?,
            offset: n.offset(),
        }),
        None => None,
    };
    Ok(DeviceArray {
        data_type: data.data_type().clone(),
        len: data.len(),
        offset: data.offset(),
        nulls,
        buffers: data.buffers().iter().map(bytes).collect::<Result<_>>()?,
        children: data
            .child_data()
            .iter()
            .map(|c| upload(device, c))
            .collect::<Result<_>>()?,
    })
}

/// Copies an array back to the host, as Arrow data (validated).
///
/// # Errors
/// [`Error::Device`] when a download fails; [`Error::Internal`] when the buffers do not
/// make a valid array of the type (a kernel wrote past what it declared).
pub fn download<D: Device>(device: &D, a: &DeviceArray<D::Buf>) -> Result<ArrayData> {
    let bytes = |b: &DeviceBytes<D::Buf>| -> Result<Buffer> {
        // Copied into an aligned host allocation: Arrow reads values in place.
        Ok(Buffer::from_slice_ref(device.download(&b.buf, b.len)?))
    };
    let nulls = match &a.nulls {
        Some(n) => Some(NullBuffer::new(BooleanBuffer::new(
            bytes(&n.bytes)?,
            n.offset,
            a.len,
        ))),
        None => None,
    };
    let builder = ArrayData::builder(a.data_type.clone())
        .len(a.len)
        .offset(a.offset)
        .nulls(nulls)
        .buffers(a.buffers.iter().map(bytes).collect::<Result<_>>()?)
        .child_data(
            a.children
                .iter()
                .map(|c| download(device, c))
                .collect::<Result<_>>()?,
        );
    builder.build().map_err(|e| {
        Error::Internal(format!(
            "a {} column came back from the device malformed: {e}",
            a.data_type
        ))
    })
}

/// Bytes per value of a type whose values are one fixed-width slot each (the types the
/// generated kernels read and write directly); `None` for every other layout (strings,
/// nested types, booleans, which are bits).
pub fn fixed_width(t: &DataType) -> Option<usize> {
    use DataType::*;
    Some(match t {
        Int8 | UInt8 => 1,
        Int16 | UInt16 => 2,
        Int32 | UInt32 | Float32 | Date32 | Time32(_) => 4,
        Int64
        | UInt64
        | Float64
        | Date64
        | Time64(_)
        | Timestamp(_, _)
        | Duration(_)
        | Decimal64(_, _) => 8,
        Decimal128(_, _) => 16,
        _ => return None,
    })
}

/// The type a column of type `t` is held in on the device: string views become strings
/// with 64-bit offsets (a view's variadic data buffers would make every kernel's arguments
/// depend on the batch), every other type is held as it is. Export casts back.
pub fn storage(t: &DataType) -> DataType {
    match t {
        DataType::Utf8View => DataType::LargeUtf8,
        DataType::BinaryView => DataType::LargeBinary,
        other => other.clone(),
    }
}

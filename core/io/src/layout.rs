//! The blocks of a stored array: its stored chunking, or a requested one checked against
//! it; and how an array inside a file is named in errors. Shared by the formats that store
//! arrays in chunks of their own (Zarr, HDF5, NetCDF-4).

#[cfg(any(feature = "hdf5", feature = "netcdf"))]
use crate::error::Result;
#[cfg(any(feature = "hdf5", feature = "netcdf"))]
use tessera_core::chunks::ChunkSpec;
use tessera_core::chunks::Chunks;

/// The blocks of an array of `shape` stored in chunks of `stored` (`None`: stored whole,
/// contiguously): `requested` when given (resolved like any chunk spec), else the stored
/// chunks (clipped at the edges), else blocks of `chunk-size` bytes. With a note for
/// `explain()` when requested blocks cut stored chunks, which the format then reads once
/// per block that touches them.
///
/// # Errors
/// A requested chunking that does not fit the shape.
#[cfg(any(feature = "hdf5", feature = "netcdf"))]
pub(crate) fn blocks(
    shape: &[usize],
    stored: Option<&[usize]>,
    requested: Option<ChunkSpec>,
    item_size: usize,
) -> Result<(Chunks, Option<String>)> {
    let stored = stored
        .filter(|c| c.len() == shape.len() && !c.contains(&0))
        .map(|c| Chunks::regular(shape, c));
    let chunks = match (requested, &stored) {
        (Some(spec), _) => {
            spec.resolve(shape, item_size, tessera_core::config::chunk_size_bytes()?)?
        }
        (None, Some(s)) => return Ok((s.clone(), None)),
        (None, None) => {
            ChunkSpec::Auto.resolve(shape, item_size, tessera_core::config::chunk_size_bytes()?)?
        }
    };
    let note = stored.and_then(|s| {
        let cut = cut_axes(&s, &chunks);
        (!cut.is_empty()).then(|| {
            format!(
                "the requested blocks {:?} cut the stored chunks {:?} along axes {cut:?}: a stored chunk is read and decompressed once for every block that touches it; blocks that are whole multiples of the stored chunks read each once",
                chunks.max_block_shape(),
                s.max_block_shape()
            )
        })
    });
    Ok((chunks, note))
}

/// An error about the array `name` inside the file `path` (`file.h5:t2m`).
#[cfg(any(feature = "hdf5", feature = "netcdf"))]
pub(crate) fn located(path: &std::path::Path, name: &str, detail: String) -> crate::error::Error {
    crate::error::Error::Storage {
        location: format!("{}:{name}", path.display()),
        detail,
    }
}

/// The axes along which `wanted` has a block boundary that `stored` has not.
pub(crate) fn cut_axes(stored: &Chunks, wanted: &Chunks) -> Vec<usize> {
    (0..stored.ndim())
        .filter(|&ax| {
            let bounds = stored.offsets(ax);
            wanted
                .offsets(ax)
                .iter()
                .any(|o| bounds.binary_search(o).is_err())
        })
        .collect()
}

#[cfg(all(test, any(feature = "hdf5", feature = "netcdf")))]
mod tests {
    use super::*;

    #[test]
    fn stored_chunks_by_default_and_a_note_when_requested_blocks_cut_them() {
        let (c, note) = blocks(&[100, 30], Some(&[40, 30]), None, 8).unwrap();
        assert_eq!(c.axis(0), &[40, 40, 20]);
        assert!(note.is_none());
        let (c, note) = blocks(&[100, 30], Some(&[40, 30]), Some([80usize, 30].into()), 8).unwrap();
        assert_eq!(c.axis(0), &[80, 20]);
        assert!(note.is_none(), "80 is two stored chunks");
        let (_, note) = blocks(&[100, 30], Some(&[40, 30]), Some([50usize, 30].into()), 8).unwrap();
        assert!(note.unwrap().contains("along axes [0]"));
        let (c, _) = blocks(&[10, 3], None, None, 8).unwrap();
        assert_eq!(c.shape(), vec![10, 3]);
    }
}

//! The HTML Jupyter shows for an array: the chunk table Dask users know (bytes, shape,
//! blocks and tasks, dtype, for the whole array and one chunk), plus the backend.

use tessera::chunks::format_bytes;
use tessera::Array;

use crate::convert::shape_text;

/// The chunk table of `a` as an HTML fragment.
pub fn array_table(a: &Array) -> String {
    let chunk = a.chunks().max_block_shape();
    let chunk_bytes = chunk.iter().product::<usize>() as u64 * a.dtype().size() as u64;
    let tasks = a
        .num_tasks()
        .map(|t| t.to_string())
        .unwrap_or_else(|e| format!("? ({e})"));
    let blocks = a.chunks().count();
    let device = a.backend().capabilities().device.clone();
    format!(
        "<table>\n<thead><tr><td></td><th>Array</th><th>Chunk</th></tr></thead>\n<tbody>\n\
         <tr><th>Bytes</th><td>{}</td><td>{}</td></tr>\n\
         <tr><th>Shape</th><td>{}</td><td>{}</td></tr>\n\
         <tr><th>Blocks</th><td colspan=\"2\">{} blocks in a {} grid; {} tasks</td></tr>\n\
         <tr><th>Data type</th><td colspan=\"2\">{}</td></tr>\n\
         <tr><th>Backend</th><td colspan=\"2\">{} ({})</td></tr>\n\
         </tbody>\n</table>",
        format_bytes(a.nbytes()),
        format_bytes(chunk_bytes),
        shape_text(&a.shape()),
        shape_text(&chunk),
        blocks,
        shape_text(&a.chunks().grid())
            .replace(", ", " × ")
            .trim_matches(|c| c == '(' || c == ')' || c == ','),
        tasks,
        a.dtype(),
        html_escape(a.backend_name()),
        html_escape(&device),
    )
}

fn html_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

//! The interface to the parquet crate is localized here: JSONL shard to Parquet file.

use super::output::{for_each_row, PairRow};
use super::MineError;
use crate::io_error::path_err;
use parquet::data_type::{ByteArray, ByteArrayType, Int32Type, Int64Type};
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::parser::parse_message_type;
use std::fs::File;
use std::io::BufWriter;
use std::path::Path;
use std::sync::Arc;

/// Rows per Parquet row group.
const ROW_GROUP_ROWS: usize = 4096;

const SCHEMA: &str = "message pair_row {
    required int32 format_version;
    required binary repo (UTF8);
    required binary commit (UTF8);
    required binary parent (UTF8);
    required binary path (UTF8);
    required binary old_path (UTF8);
    required binary function (UTF8);
    optional binary class (UTF8);
    required int64 before_line;
    required int64 after_line;
    required binary before (UTF8);
    required binary after (UTF8);
    required binary context (UTF8);
    required binary message (UTF8);
    required binary pair_hash (UTF8);
}";

fn pq_err(path: &Path) -> impl Fn(parquet::errors::ParquetError) -> MineError + '_ {
    move |e| MineError::Parquet { path: path.to_path_buf(), message: e.to_string() }
}

/// Convert the JSONL shard at `jsonl` into an uncompressed Parquet file at `parquet`
/// (same columns, same order), replacing it atomically.
pub fn write_parquet(jsonl: &Path, parquet: &Path) -> Result<u64, MineError> {
    let schema = Arc::new(parse_message_type(SCHEMA).map_err(pq_err(parquet))?);
    let props = Arc::new(WriterProperties::builder().build());
    let tmp = parquet.with_extension("parquet.tmp");
    let file = File::create(&tmp).map_err(path_err(&tmp))?;
    let mut writer = SerializedFileWriter::new(BufWriter::new(file), schema, props).map_err(pq_err(parquet))?;
    let mut batch: Vec<PairRow> = Vec::with_capacity(ROW_GROUP_ROWS);
    let mut rows = 0_u64;
    for_each_row(jsonl, |row| {
        batch.push(row);
        if batch.len() == ROW_GROUP_ROWS {
            write_group(&mut writer, &batch).map_err(pq_err(parquet))?;
            rows += batch.len() as u64;
            batch.clear();
        }
        Ok(())
    })?;
    if !batch.is_empty() || rows == 0 {
        write_group(&mut writer, &batch).map_err(pq_err(parquet))?;
        rows += batch.len() as u64;
    }
    let file = writer.into_inner().map_err(pq_err(parquet))?;
    let file = file.into_inner().map_err(|e| path_err(&tmp)(e.into_error()))?;
    file.sync_all().map_err(path_err(&tmp))?;
    std::fs::rename(&tmp, parquet).map_err(path_err(parquet))?;
    Ok(rows)
}

fn write_group<W: std::io::Write + Send>(
    writer: &mut SerializedFileWriter<W>,
    rows: &[PairRow],
) -> parquet::errors::Result<()> {
    let mut group = writer.next_row_group()?;
    let mut column = 0;
    while let Some(mut col) = group.next_column()? {
        let text = |f: fn(&PairRow) -> &str| -> Vec<ByteArray> {
            rows.iter().map(|r| ByteArray::from(f(r).as_bytes().to_vec())).collect()
        };
        match column {
            0 => {
                let values: Vec<i32> =
                    rows.iter().map(|r| i32::try_from(r.format_version).unwrap_or(i32::MAX)).collect();
                col.typed::<Int32Type>().write_batch(&values, None, None)?;
            }
            7 => {
                let values: Vec<ByteArray> = rows
                    .iter()
                    .filter_map(|r| r.class.as_deref())
                    .map(|c| ByteArray::from(c.as_bytes().to_vec()))
                    .collect();
                let def: Vec<i16> = rows.iter().map(|r| i16::from(r.class.is_some())).collect();
                col.typed::<ByteArrayType>().write_batch(&values, Some(&def), None)?;
            }
            8 | 9 => {
                let values: Vec<i64> = rows
                    .iter()
                    .map(|r| if column == 8 { r.before_line } else { r.after_line })
                    .map(|v| i64::try_from(v).unwrap_or(i64::MAX))
                    .collect();
                col.typed::<Int64Type>().write_batch(&values, None, None)?;
            }
            _ => {
                let values = match column {
                    1 => text(|r| &r.repo),
                    2 => text(|r| &r.commit),
                    3 => text(|r| &r.parent),
                    4 => text(|r| &r.path),
                    5 => text(|r| &r.old_path),
                    6 => text(|r| &r.function),
                    10 => text(|r| &r.before),
                    11 => text(|r| &r.after),
                    12 => text(|r| &r.context),
                    13 => text(|r| &r.message),
                    _ => text(|r| &r.pair_hash),
                };
                col.typed::<ByteArrayType>().write_batch(&values, None, None)?;
            }
        }
        col.close()?;
        column += 1;
    }
    group.close()?;
    Ok(())
}

/// Convert any JSONL file into Parquet with one optional UTF-8 column per name in `columns`:
/// strings are stored as they are, other JSON values (numbers, lists, objects) as JSON text,
/// and missing or null fields as nulls. Used for dataset files other than mined pairs.
///
/// # Errors
/// When the JSONL cannot be read or parsed, or the Parquet file cannot be written.
pub fn write_jsonl_as_parquet(jsonl: &Path, parquet: &Path, columns: &[&str]) -> Result<u64, MineError> {
    let mut schema = String::from("message row {\n");
    for name in columns {
        schema.push_str(&format!("    optional binary {name} (UTF8);\n"));
    }
    schema.push('}');
    let schema = Arc::new(parse_message_type(&schema).map_err(pq_err(parquet))?);
    let props = Arc::new(WriterProperties::builder().build());
    let tmp = parquet.with_extension("parquet.tmp");
    let file = File::create(&tmp).map_err(path_err(&tmp))?;
    let mut writer = SerializedFileWriter::new(BufWriter::new(file), schema, props).map_err(pq_err(parquet))?;
    let text = std::fs::read_to_string(jsonl).map_err(path_err(jsonl))?;
    let mut rows = 0_u64;
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    for chunk in lines.chunks(ROW_GROUP_ROWS) {
        let values: Vec<serde_json::Value> = chunk
            .iter()
            .map(|l| serde_json::from_str(l))
            .collect::<Result<_, _>>()
            .map_err(|e| MineError::Parquet { path: jsonl.to_path_buf(), message: e.to_string() })?;
        let mut group = writer.next_row_group().map_err(pq_err(parquet))?;
        let mut column = 0;
        while let Some(mut col) = group.next_column().map_err(pq_err(parquet))? {
            let name = columns[column];
            let cells: Vec<Option<String>> = values
                .iter()
                .map(|v| match v.get(name) {
                    None | Some(serde_json::Value::Null) => None,
                    Some(serde_json::Value::String(s)) => Some(s.clone()),
                    Some(other) => Some(other.to_string()),
                })
                .collect();
            let data: Vec<ByteArray> = cells.iter().flatten().map(|s| ByteArray::from(s.as_bytes().to_vec())).collect();
            let def: Vec<i16> = cells.iter().map(|c| i16::from(c.is_some())).collect();
            col.typed::<ByteArrayType>().write_batch(&data, Some(&def), None).map_err(pq_err(parquet))?;
            col.close().map_err(pq_err(parquet))?;
            column += 1;
        }
        group.close().map_err(pq_err(parquet))?;
        rows += values.len() as u64;
    }
    let file = writer.into_inner().map_err(pq_err(parquet))?;
    let file = file.into_inner().map_err(|e| path_err(&tmp)(e.into_error()))?;
    file.sync_all().map_err(path_err(&tmp))?;
    std::fs::rename(&tmp, parquet).map_err(path_err(parquet))?;
    Ok(rows)
}

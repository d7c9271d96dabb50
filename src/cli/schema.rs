//! `feedbench schema`: the plan's JSON Schema, generated from the plan's types.

use std::io::Write;

use super::CliError;

#[derive(Debug, clap::Args)]
pub struct SchemaArgs {}

impl SchemaArgs {
    pub fn exec(self, out: &mut dyn Write) -> Result<(), CliError> {
        out.write_all(plan_schema().as_bytes())?;
        Ok(())
    }
}

/// The schema as schemas/plan.schema.json holds it: pretty JSON and a final newline.
pub fn plan_schema() -> String {
    let schema = schemars::schema_for!(crate::plan::Plan);
    let mut s = serde_json::to_string_pretty(&schema).unwrap_or_default();
    s.push('\n');
    s
}

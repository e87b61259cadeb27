//! What the parser makes of each construct.

use super::ast::*;
use super::parse;
use crate::extract::Budget;
use std::time::Duration;

fn script(source: &str) -> Script {
    let mut budget = Budget::new(Duration::from_secs(10));
    parse(source, 256, &mut budget).expect("within budget")
}

#[test]
fn debug_dump() {
    let src = std::env::var("DUMP").unwrap_or_default();
    let s = script(&src);
    println!("{:#?}", s);
}

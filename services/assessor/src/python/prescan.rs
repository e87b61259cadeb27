//! How deep a Python file's syntax tree can be, read off its tokens before it is parsed.
//!
//! ruff's parser grows its own stack, but the tree it returns is dropped recursively, and a file
//! of nothing but `-` signs or `(` brackets makes a tree hundreds of thousands of levels deep:
//! dropping it overflows the stack, and building it takes hundreds of milliseconds. So the
//! tokens are read first (a twentieth of the parse) and a file whose tree could be deeper than
//! the limit is refused as too deep, as it would be by the walk anyway.
//!
//! The estimate is an upper bound of the tree's depth: each token that can add a level (an
//! operator, a keyword, a dot, an opening bracket, an indent) counts one at its bracket level,
//! and the count of a level restarts where a sibling starts (a comma, a new logical line).
//! Operands and closing brackets add nothing.

use ruff_python_ast::token::TokenKind;
use ruff_python_parser::{Mode, lexer};

/// Where the estimate first passed the limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TooDeep {
    /// The line of the token that passed it (1-based), counted from the newlines the lexer
    /// reports: a string that spans lines counts as one, so this is a lower bound.
    pub line: u32,
}

/// Reads the tokens of `source` and stops at the first place its tree could be deeper than
/// `limit` levels.
pub fn check_depth(source: &str, limit: u32) -> Result<(), TooDeep> {
    let mut lexer = lexer::lex(source, Mode::Module);
    // The running count of each open bracket level, innermost last, and their sum.
    let mut levels: Vec<u32> = vec![0];
    let mut total: u32 = 0;
    let mut indent: u32 = 0;
    let mut line: u32 = 1;
    loop {
        let kind = lexer.next_token();
        match kind {
            TokenKind::EndOfFile => return Ok(()),
            TokenKind::Lpar | TokenKind::Lsqb | TokenKind::Lbrace => {
                // The bracket itself (a call, a subscript, a display) is a level of its parent.
                bump(&mut levels, &mut total);
                levels.push(0);
                total = total.saturating_add(1);
            }
            TokenKind::Rpar | TokenKind::Rsqb | TokenKind::Rbrace => {
                if levels.len() > 1
                    && let Some(count) = levels.pop()
                {
                    total = total.saturating_sub(count.saturating_add(1));
                }
            }
            TokenKind::Comma => restart(&mut levels, &mut total),
            TokenKind::Newline => {
                // A logical line ends with every bracket closed; after an error it may not have.
                levels.clear();
                levels.push(0);
                total = 0;
                line = line.saturating_add(1);
            }
            TokenKind::NonLogicalNewline => line = line.saturating_add(1),
            TokenKind::Indent => indent = indent.saturating_add(1),
            TokenKind::Dedent => indent = indent.saturating_sub(1),
            TokenKind::Name
            | TokenKind::Int
            | TokenKind::Float
            | TokenKind::Complex
            | TokenKind::String
            | TokenKind::FStringMiddle
            | TokenKind::TStringMiddle
            | TokenKind::FStringEnd
            | TokenKind::TStringEnd
            | TokenKind::Comment
            | TokenKind::Colon
            | TokenKind::Semi
            | TokenKind::Ellipsis
            | TokenKind::None
            | TokenKind::True
            | TokenKind::False => {}
            _ => bump(&mut levels, &mut total),
        }
        if total.saturating_add(indent) > limit {
            return Err(TooDeep { line });
        }
    }
}

fn bump(levels: &mut [u32], total: &mut u32) {
    if let Some(count) = levels.last_mut() {
        *count = count.saturating_add(1);
        *total = total.saturating_add(1);
    }
}

fn restart(levels: &mut [u32], total: &mut u32) {
    if let Some(count) = levels.last_mut() {
        *total = total.saturating_sub(*count);
        *count = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordinary_code_is_far_below_any_limit() {
        let code = "import os\n\ndef f(a, b=-1):\n    if a and not b:\n        return os.path.join(a, f'{b}.txt')\n    return [x * 2 for x in range(10)]\n";
        assert_eq!(check_depth(code, 16), Ok(()));
    }

    #[test]
    fn long_lists_of_negative_numbers_are_shallow() {
        let code = format!("DATA = [{}]\n", "-1.5, ".repeat(50_000));
        assert_eq!(check_depth(&code, 16), Ok(()));
    }

    #[test]
    fn nested_brackets_and_operator_chains_are_deep() {
        let parens = format!("x = {}1{}\n", "(".repeat(2000), ")".repeat(2000));
        assert!(check_depth(&parens, 1000).is_err());
        let unary = format!("x = {}1\n", "-".repeat(2000));
        assert!(check_depth(&unary, 1000).is_err());
        let sum = format!("x = 1{}\n", " + 1".repeat(2000));
        assert!(check_depth(&sum, 1000).is_err());
        let attributes = format!("x = a{}\n", ".b".repeat(2000));
        assert!(check_depth(&attributes, 1000).is_err());
        let calls = format!("x = f{}\n", "()".repeat(2000));
        assert!(check_depth(&calls, 1000).is_err());
    }

    #[test]
    fn indentation_counts_as_nesting() {
        let mut code = String::new();
        for i in 0..300 {
            code.push_str(&" ".repeat(i));
            code.push_str("if x:\n");
        }
        code.push_str(&" ".repeat(300));
        code.push_str("pass\n");
        assert!(check_depth(&code, 200).is_err());
        assert_eq!(check_depth(&code, 1000), Ok(()));
    }

    #[test]
    fn the_place_it_passed_the_limit_is_given() {
        let code = format!("x = 1\n\ny = [\n    {}1]\n", "-".repeat(100));
        assert_eq!(check_depth(&code, 50), Err(TooDeep { line: 4 }));
    }
}

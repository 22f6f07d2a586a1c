//! Template patterns: token sequences with holes, their text form (`$N0.keys`) and their rendering as code.

use std::fmt;

/// One token of a pattern.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Piece {
    /// A token written as is: keyword, operator, number, builtin, name after a dot,
    /// keyword-argument name, or a string literal that only the fixed code has.
    Text(String),
    /// `$N<i>`: one project identifier (equal indices bind equal names).
    Name(u8),
    /// `$S<i>`: one string literal.
    Str(u8),
    /// `$E<i>`: one whole expression, bound to a syntax node.
    Expr(u8),
}

impl Piece {
    /// Read the text form; anything that is not a hole is a token (Python tokens never start with `$`).
    #[must_use]
    pub fn parse(text: &str) -> Piece {
        let hole = |kind: char| {
            text.strip_prefix('$').and_then(|rest| rest.strip_prefix(kind)).and_then(|n| n.parse::<u8>().ok())
        };
        if let Some(i) = hole('N') {
            Piece::Name(i)
        } else if let Some(i) = hole('S') {
            Piece::Str(i)
        } else if let Some(i) = hole('E') {
            Piece::Expr(i)
        } else {
            Piece::Text(text.to_string())
        }
    }

    #[must_use]
    pub fn is_hole(&self) -> bool {
        !matches!(self, Piece::Text(_))
    }
}

impl fmt::Display for Piece {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Piece::Text(text) => f.write_str(text),
            Piece::Name(i) => write!(f, "$N{i}"),
            Piece::Str(i) => write!(f, "$S{i}"),
            Piece::Expr(i) => write!(f, "$E{i}"),
        }
    }
}

/// Where a template applies and what it does there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TemplateKind {
    /// Rewrite an expression (the before pattern matches exactly one syntax node).
    Expression,
    /// Rewrite a whole one-line statement.
    Statement,
    /// Insert a one-line statement (before pattern empty).
    InsertStatement,
    /// Delete a one-line statement (after pattern empty).
    DeleteStatement,
}

impl TemplateKind {
    pub const ALL: [TemplateKind; 4] = [
        TemplateKind::Expression,
        TemplateKind::Statement,
        TemplateKind::InsertStatement,
        TemplateKind::DeleteStatement,
    ];

    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            TemplateKind::Expression => "expression",
            TemplateKind::Statement => "statement",
            TemplateKind::InsertStatement => "insert-statement",
            TemplateKind::DeleteStatement => "delete-statement",
        }
    }

    #[must_use]
    pub fn from_name(name: &str) -> Option<TemplateKind> {
        TemplateKind::ALL.into_iter().find(|k| k.name() == name)
    }
}

/// Where an expression stands in its statement: whether its value is used as a truth value.
/// Expression templates are learned and applied per context, so that a rewrite seen in
/// conditions (`$E0` → `$E0 is not None`) is not tried on values it would turn into booleans.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Context {
    /// A condition: of `if`, `elif`, `while`, `assert`, a comprehension's `if`, or an operand
    /// of `not`, `and`, `or` (through parentheses).
    Condition,
    /// Any other expression.
    Value,
}

impl Context {
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Context::Condition => "condition",
            Context::Value => "value",
        }
    }

    #[must_use]
    pub fn from_name(name: &str) -> Option<Context> {
        [Context::Condition, Context::Value].into_iter().find(|c| c.name() == name)
    }

    /// The context of the expression `node`.
    #[must_use]
    pub fn of(node: tree_sitter::Node<'_>) -> Context {
        let mut node = node;
        while let Some(parent) = node.parent().filter(|p| p.kind() == "parenthesized_expression") {
            node = parent;
        }
        let Some(parent) = node.parent() else { return Context::Value };
        let is = |field: &str| parent.child_by_field_name(field).is_some_and(|c| c.id() == node.id());
        let condition = match parent.kind() {
            "if_statement" | "elif_clause" | "while_statement" => is("condition"),
            "not_operator" | "boolean_operator" | "if_clause" => true,
            "assert_statement" => parent.named_child(0).is_some_and(|c| c.id() == node.id()),
            _ => false,
        };
        if condition {
            Context::Condition
        } else {
            Context::Value
        }
    }
}

/// A fix template: code matching `before` becomes `after`, holes carried over.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Template {
    pub kind: TemplateKind,
    pub before: Vec<Piece>,
    pub after: Vec<Piece>,
    /// For an expression template, the context it was seen in (`None`: any, as in files
    /// learned before contexts were recorded).
    pub context: Option<Context>,
}

impl Template {
    /// Holes of `after` that `before` does not bind (names to be chosen from the scope).
    #[must_use]
    pub fn new_names(&self) -> Vec<u8> {
        let mut new: Vec<u8> = self
            .after
            .iter()
            .filter_map(|p| match p {
                Piece::Name(i) if !self.before.contains(p) => Some(*i),
                _ => None,
            })
            .collect();
        new.sort_unstable();
        new.dedup();
        new
    }
}

impl fmt::Display for Template {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let code = |pieces: &[Piece]| render(&pieces.iter().map(ToString::to_string).collect::<Vec<_>>());
        match self.kind {
            TemplateKind::InsertStatement => write!(f, "insert `{}`", code(&self.after)),
            TemplateKind::DeleteStatement => write!(f, "delete `{}`", code(&self.before)),
            TemplateKind::Expression | TemplateKind::Statement => {
                write!(f, "`{}` → `{}`", code(&self.before), code(&self.after))
            }
        }
    }
}

/// Join tokens into code with conventional spacing (`f(a, b)`, `x[-1]`, `a - 1`, `f(k=v)`).
#[must_use]
pub fn render<S: AsRef<str>>(tokens: &[S]) -> String {
    let mut out = String::new();
    let mut brackets: Vec<&str> = Vec::new();
    let mut prev: Option<&str> = None;
    let mut prev_prefix = false;
    for token in tokens.iter().map(AsRef::as_ref) {
        if let Some(prev) = prev.filter(|_| !prev_prefix) {
            if space_between(prev, token, brackets.last().copied()) {
                out.push(' ');
            }
        }
        prev_prefix = matches!(token, "-" | "+" | "~" | "*" | "**") && !prev.is_some_and(ends_value);
        match token {
            "(" | "[" | "{" => brackets.push(token),
            ")" | "]" | "}" => {
                brackets.pop();
            }
            _ => {}
        }
        out.push_str(token);
        prev = Some(token);
    }
    out
}

/// Whether `token` ends a value (a name, literal, hole or closing bracket) rather than an operator.
fn ends_value(token: &str) -> bool {
    matches!(token, ")" | "]" | "}")
        || (token.starts_with(|c: char| c.is_alphanumeric() || matches!(c, '_' | '$' | '"' | '\''))
            && !is_keyword(token))
}

fn is_keyword(token: &str) -> bool {
    matches!(
        token,
        "and"
            | "as"
            | "assert"
            | "async"
            | "await"
            | "break"
            | "class"
            | "continue"
            | "def"
            | "del"
            | "elif"
            | "else"
            | "except"
            | "finally"
            | "for"
            | "from"
            | "global"
            | "if"
            | "import"
            | "in"
            | "is"
            | "lambda"
            | "nonlocal"
            | "not"
            | "or"
            | "pass"
            | "raise"
            | "return"
            | "try"
            | "while"
            | "with"
            | "yield"
    )
}

fn space_between(prev: &str, token: &str, bracket: Option<&str>) -> bool {
    if matches!(prev, "(" | "[" | "{" | ".") || matches!(token, ")" | "]" | "}" | "," | "." | ":") {
        return false;
    }
    if matches!(token, "(" | "[") {
        return !ends_value(prev);
    }
    if token == "=" || prev == "=" {
        return bracket.is_none();
    }
    if prev == ":" {
        return bracket != Some("[");
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(text: &str) -> String {
        render(&text.split(' ').collect::<Vec<_>>())
    }

    #[test]
    fn rendering_spaces_tokens_as_people_write_them() {
        assert_eq!(code("$N0 . get ( $N1 , None )"), "$N0.get($N1, None)");
        assert_eq!(code("return $N0 [ - 1 ] - 1"), "return $N0[-1] - 1");
        assert_eq!(code("f ( * $N0 , key = $S0 ) [ 1 : ]"), "f(*$N0, key=$S0)[1:]");
        assert_eq!(code("$N0 = { $S0 : ( $N1 , ) }"), "$N0 = {$S0: ($N1,)}");
        assert_eq!(code("if not ( $E0 ) :"), "if not ($E0):");
    }

    #[test]
    fn pieces_round_trip_through_their_text_form() {
        for text in ["$N0", "$S12", "$E3", "keys", "'$N0'", "$"] {
            assert_eq!(Piece::parse(text).to_string(), text);
        }
        assert!(Piece::parse("$E1").is_hole());
        assert!(!Piece::parse("'$E1'").is_hole());
    }
}

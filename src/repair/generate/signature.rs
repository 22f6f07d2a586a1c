//! Call-argument repairs directed by a `TypeError` raised at a call: a missing argument inserted, a surplus one removed, an unknown keyword renamed.

use crate::patch::Edit;
use crate::python::Parsed;
use crate::repair::generate::operators::{enclosing_function, scope_names, Mutation, Operator};
use std::collections::BTreeSet;
use tree_sitter::Node;

/// What a `TypeError` message says is wrong with a call of `callee`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallError {
    /// `f() missing 2 required positional arguments: 'a' and 'b'`.
    MissingPositional { callee: String, names: Vec<String> },
    /// `f() missing 1 required keyword-only argument: 'k'`.
    MissingKeyword { callee: String, names: Vec<String> },
    /// `f() takes 2 positional arguments but 3 were given`.
    TooManyPositional { callee: String },
    /// `f() got an unexpected keyword argument 'k'`.
    UnexpectedKeyword { callee: String, name: String },
}

impl CallError {
    /// Read a `TypeError` message; `None` for any other kind of message.
    #[must_use]
    pub fn parse(message: &str) -> Option<CallError> {
        let line = message.lines().next()?.trim();
        let (head, rest) = line.split_once("() ")?;
        // `Cart.add()`, `Cart.__init__()`: the name a call site spells.
        let mut parts: Vec<&str> = head.rsplit('.').collect();
        if parts.first() == Some(&"__init__") && parts.len() > 1 {
            parts.remove(0);
        }
        let callee = (*parts.first()?).to_string();
        if !callee.chars().all(|c| c.is_alphanumeric() || c == '_') || callee.is_empty() {
            return None;
        }
        let quoted = || rest.split('\'').skip(1).step_by(2).map(ToString::to_string).collect::<Vec<_>>();
        if rest.starts_with("missing ") && rest.contains("required positional argument") {
            return Some(CallError::MissingPositional { callee, names: quoted() });
        }
        if rest.starts_with("missing ") && rest.contains("required keyword-only argument") {
            return Some(CallError::MissingKeyword { callee, names: quoted() });
        }
        if rest.starts_with("takes ") && rest.contains("positional argument") && rest.contains(" given") {
            return Some(CallError::TooManyPositional { callee });
        }
        if rest.starts_with("got an unexpected keyword argument") {
            return quoted().into_iter().next().map(|name| CallError::UnexpectedKeyword { callee, name });
        }
        None
    }

    fn callee(&self) -> &str {
        match self {
            CallError::MissingPositional { callee, .. }
            | CallError::MissingKeyword { callee, .. }
            | CallError::TooManyPositional { callee }
            | CallError::UnexpectedKeyword { callee, .. } => callee,
        }
    }
}

/// Edits of the calls of `error`'s callee that start on `line` (1-based).
#[must_use]
pub fn call_fixes(parsed: &Parsed, line: usize, error: &CallError) -> Vec<Mutation> {
    let mut out = Vec::new();
    for call in calls_on_line(parsed, line, error.callee()) {
        let Some(args) = call.child_by_field_name("arguments").filter(|a| a.kind() == "argument_list") else {
            continue;
        };
        let params = parameters_of(parsed, error.callee(), call);
        let scope: BTreeSet<String> = enclosing_function(call).map(|f| scope_names(parsed, f)).unwrap_or_default();
        match error {
            CallError::MissingPositional { names, .. } => {
                for name in names {
                    insert_positional(parsed, args, name, params.as_deref(), &scope, &mut out);
                }
            }
            CallError::MissingKeyword { names, .. } => {
                for name in names {
                    for value in values_for(name, &scope) {
                        out.push(insert_at(parsed, args, None, &format!("{name}={value}")));
                    }
                }
            }
            CallError::TooManyPositional { .. } => {
                for arg in positional(args) {
                    out.push(remove(parsed, args, arg));
                }
            }
            CallError::UnexpectedKeyword { name, .. } => {
                unexpected_keyword(parsed, args, name, params.as_deref(), &mut out);
            }
        }
    }
    out
}

/// Calls on `line` whose function is `callee` or `something.callee`.
fn calls_on_line<'t>(parsed: &'t Parsed, line: usize, callee: &str) -> Vec<Node<'t>> {
    let mut out = Vec::new();
    let mut stack = vec![parsed.root()];
    while let Some(node) = stack.pop() {
        let (start, end) = (node.start_position().row + 1, node.end_position().row + 1);
        if end < line || start > line {
            continue;
        }
        if node.kind() == "call" && start == line {
            let function = node.child_by_field_name("function");
            let name = function.map(|f| match f.kind() {
                "attribute" => f.child_by_field_name("attribute").map_or("", |a| parsed.node_text(a)),
                _ => parsed.node_text(f),
            });
            if name == Some(callee) {
                out.push(node);
            }
        }
        let mut cursor = node.walk();
        stack.extend(node.named_children(&mut cursor));
    }
    out
}

/// Parameter names of `callee` when the same file defines it (a class: its `__init__`),
/// without `self`/`cls` when the call passes them implicitly.
fn parameters_of(parsed: &Parsed, callee: &str, call: Node<'_>) -> Option<Vec<String>> {
    let defs = crate::python::functions(parsed);
    let def = defs
        .iter()
        .find(|d| d.name == callee && d.class.is_none())
        .or_else(|| defs.iter().find(|d| d.name == "__init__" && d.class.as_deref() == Some(callee)))
        .or_else(|| defs.iter().find(|d| d.name == callee))?;
    let node = parsed.root().descendant_for_byte_range(def.byte_range.start, def.byte_range.end)?;
    let function = match node.kind() {
        "decorated_definition" => node.child_by_field_name("definition")?,
        _ => node,
    };
    if function.kind() != "function_definition" {
        return None;
    }
    let params = function.child_by_field_name("parameters")?;
    let mut names = Vec::new();
    let mut cursor = params.walk();
    for p in params.named_children(&mut cursor) {
        let ident = if p.kind() == "identifier" { Some(p) } else { p.child_by_field_name("name") };
        if let Some(ident) = ident.filter(|i| i.kind() == "identifier") {
            names.push(parsed.node_text(ident).to_string());
        }
    }
    let implicit = def.class.is_some()
        && (call.child_by_field_name("function").is_some_and(|f| f.kind() == "attribute") || def.name == "__init__");
    if implicit && names.first().is_some_and(|n| n == "self" || n == "cls") {
        names.remove(0);
    }
    Some(names)
}

/// The positional arguments of a call, in order.
fn positional<'t>(args: Node<'t>) -> Vec<Node<'t>> {
    let mut cursor = args.walk();
    args.named_children(&mut cursor)
        .filter(|a| !matches!(a.kind(), "keyword_argument" | "list_splat" | "dictionary_splat" | "comment"))
        .collect()
}

/// Values worth passing for a parameter called `name`: the same name in scope, names spelled
/// like it, `None`.
fn values_for(name: &str, scope: &BTreeSet<String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    if scope.contains(name) {
        out.push(name.to_string());
    }
    let mut similar: Vec<(usize, &String)> = scope
        .iter()
        .filter(|s| s.as_str() != name)
        .map(|s| (crate::repair::generate::operators::edit_distance(name, s), s))
        .filter(|(d, s)| *d <= 2.max(name.len().min(s.len()) / 3))
        .collect();
    similar.sort();
    out.extend(similar.into_iter().take(3).map(|(_, s)| s.clone()));
    out.push("None".to_string());
    out
}

/// The missing parameter `name` passed by keyword, and an argument inserted at each position:
/// with the signature, the parameter that position stands for (the arguments may have
/// shifted: `f(a, c)` for `f(a, b, c)` reports `c` missing), valued by a name like it.
fn insert_positional(
    parsed: &Parsed,
    args: Node<'_>,
    name: &str,
    params: Option<&[String]>,
    scope: &BTreeSet<String>,
    out: &mut Vec<Mutation>,
) {
    let given = positional(args).len();
    for slot in 0..=given {
        let wanted = params.and_then(|p| p.get(slot)).map_or(name, String::as_str);
        for value in values_for(wanted, scope) {
            out.push(insert_at(parsed, args, Some(slot), &value));
        }
    }
    if params.is_some() {
        for value in values_for(name, scope) {
            out.push(insert_at(parsed, args, None, &format!("{name}={value}")));
        }
    }
}

/// `text` inserted as argument number `slot` (`None`: after every argument).
fn insert_at(parsed: &Parsed, args: Node<'_>, slot: Option<usize>, text: &str) -> Mutation {
    let given = positional(args);
    let mut cursor = args.walk();
    let all: Vec<Node<'_>> = args.named_children(&mut cursor).filter(|a| a.kind() != "comment").collect();
    let edit = match slot.and_then(|s| given.get(s)) {
        Some(before) => Edit::insertion(before.start_byte(), format!("{text}, ")),
        None => match all.last() {
            Some(last) => Edit::insertion(last.end_byte(), format!(", {text}")),
            None => Edit::insertion(args.start_byte() + 1, text.to_string()),
        },
    };
    let call = args.parent().and_then(|c| c.child_by_field_name("function")).map_or("", |f| parsed.node_text(f));
    Mutation { operator: Operator::CallArguments, edit, description: format!("pass `{text}` to `{call}()`") }
}

/// `arg` and one comma beside it removed.
fn remove(parsed: &Parsed, args: Node<'_>, arg: Node<'_>) -> Mutation {
    let text = parsed.text();
    let mut cursor = args.walk();
    let all: Vec<Node<'_>> = args.named_children(&mut cursor).filter(|a| a.kind() != "comment").collect();
    let i = all.iter().position(|a| a.id() == arg.id()).unwrap_or(0);
    let range = match (all.get(i + 1), i.checked_sub(1).and_then(|p| all.get(p))) {
        (Some(next), _) => arg.start_byte()..next.start_byte(),
        (None, Some(prev)) => prev.end_byte()..arg.end_byte(),
        (None, None) => arg.start_byte()..arg.end_byte(),
    };
    let shown: String = text[arg.byte_range()].chars().take(40).collect();
    Mutation {
        operator: Operator::CallArguments,
        edit: Edit::deletion(range),
        description: format!("remove argument `{shown}`"),
    }
}

/// An unknown keyword removed, or renamed to the parameter spelled most like it.
fn unexpected_keyword(parsed: &Parsed, args: Node<'_>, name: &str, params: Option<&[String]>, out: &mut Vec<Mutation>) {
    let mut cursor = args.walk();
    let keywords: Vec<Node<'_>> = args.named_children(&mut cursor).filter(|a| a.kind() == "keyword_argument").collect();
    for kw in keywords {
        let Some(key) = kw.child_by_field_name("name").filter(|k| parsed.node_text(*k) == name) else { continue };
        out.push(remove(parsed, args, kw));
        let mut similar: Vec<(usize, &String)> = params
            .unwrap_or_default()
            .iter()
            .map(|p| (crate::repair::generate::operators::edit_distance(name, p), p))
            .collect();
        similar.sort();
        for (_, param) in similar.into_iter().take(3) {
            out.push(Mutation {
                operator: Operator::CallArguments,
                edit: Edit::replacement(key.byte_range(), param.clone()),
                description: format!("keyword `{name}` → `{param}`"),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn apply(src: &str, m: &Mutation) -> String {
        let mut out = src.to_string();
        out.replace_range(m.edit.range.clone(), &m.edit.content);
        out
    }

    fn fixes(src: &str, line: usize, message: &str) -> Vec<String> {
        let parsed = Parsed::new(src);
        let error = CallError::parse(message).expect("a call error");
        call_fixes(&parsed, line, &error).iter().map(|m| apply(src, m)).collect()
    }

    #[test]
    fn messages_of_pythons_call_errors_are_read() {
        let missing = CallError::parse("_cache() missing 1 required positional argument: 'typed'").unwrap();
        assert_eq!(missing, CallError::MissingPositional { callee: "_cache".into(), names: vec!["typed".into()] });
        let two = CallError::parse("Cart.add() missing 2 required positional arguments: 'item' and 'qty'").unwrap();
        assert_eq!(
            two,
            CallError::MissingPositional { callee: "add".into(), names: vec!["item".into(), "qty".into()] }
        );
        let init = CallError::parse("Cart.__init__() takes 2 positional arguments but 3 were given").unwrap();
        assert_eq!(init, CallError::TooManyPositional { callee: "Cart".into() });
        let kw = CallError::parse("f() got an unexpected keyword argument 'sep'").unwrap();
        assert_eq!(kw, CallError::UnexpectedKeyword { callee: "f".into(), name: "sep".into() });
        assert!(CallError::parse("unsupported operand type(s) for +: 'int' and 'str'").is_none());
        assert!(CallError::parse("'NoneType' object is not iterable").is_none());
    }

    #[test]
    fn a_missing_argument_is_passed_where_the_signature_wants_it_from_a_name_in_scope() {
        let src = "def _cache(cache, maxsize, typed):\n    def decorator(func):\n        return func\n\n    return decorator\n\n\ndef ttl_cache(maxsize=128, typed=False):\n    return _cache({}, typed)\n";
        let got = fixes(src, 9, "_cache() missing 1 required positional argument: 'typed'");
        // `typed` is reported missing because `maxsize` was skipped.
        assert!(got.iter().any(|p| p.contains("return _cache({}, maxsize, typed)")), "{got:#?}");
        assert!(got.iter().any(|p| p.contains("return _cache({}, typed, typed=None)")), "{got:#?}");
        let got = fixes(
            src.replace("_cache({}, typed)", "_cache({})").as_str(),
            9,
            "_cache() missing 2 required positional arguments: 'maxsize' and 'typed'",
        );
        assert!(got.iter().any(|p| p.contains("return _cache({}, maxsize)")), "{got:#?}");
    }

    #[test]
    fn surplus_positional_arguments_and_unknown_keywords_are_removed_or_renamed() {
        let src = "class Cart:\n    def __init__(self, items):\n        self.items = items\n\n\ndef make(xs):\n    return Cart(xs, 3)\n";
        let got = fixes(src, 7, "Cart.__init__() takes 2 positional arguments but 3 were given");
        assert!(got.iter().any(|p| p.contains("return Cart(xs)\n")), "{got:#?}");
        assert!(got.iter().any(|p| p.contains("return Cart(3)\n")), "{got:#?}");
        let src = "def join(parts, separator=' '):\n    return separator.join(parts)\n\n\ndef show(xs):\n    return join(xs, sep=', ')\n";
        let got = fixes(src, 6, "join() got an unexpected keyword argument 'sep'");
        assert!(got.iter().any(|p| p.contains("return join(xs, separator=', ')")), "{got:#?}");
        assert!(got.iter().any(|p| p.contains("return join(xs)\n")), "{got:#?}");
    }
}

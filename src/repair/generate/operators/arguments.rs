//! Arguments: two adjacent positional arguments of a call or the operands of a non-commutative operator swapped; an option of the object passed on to a call.

use super::tree::{enclosing_class, enclosing_function, positional_arguments};
use super::{shorten, Family, Generator, Operator};
use crate::patch::Edit;
use tree_sitter::Node;

pub(super) const FAMILY: Family =
    Family { name: "arguments", operators: &[Operator::ArgumentSwap, Operator::ForwardOption] };

/// Binary operators whose operands are worth swapping (not commutative, or `+` on sequences).
const SWAPPABLE: &[&str] = &["-", "/", "//", "%", "**", "+", "<<", ">>", "@"];

/// `a - b` → `b - a`; `+` too, for sequences and strings (`s + c` vs `c + s`).
pub(super) fn swap_operands(g: &mut Generator<'_>, node: Node<'_>) {
    let Some(op) = node.child_by_field_name("operator") else { return };
    let text = g.text(op).to_string();
    if !SWAPPABLE.contains(&text.as_str()) {
        return;
    }
    let (Some(left), Some(right)) = (node.child_by_field_name("left"), node.child_by_field_name("right")) else {
        return;
    };
    let (tl, tr) = (g.text(left).to_string(), g.text(right).to_string());
    if tl != tr {
        let between = g.parsed.text()[left.end_byte()..right.start_byte()].to_string();
        let edit = Edit::replacement(left.start_byte()..right.end_byte(), format!("{tr}{between}{tl}"));
        g.add(Operator::ArgumentSwap, edit, format!("swap the operands of `{text}`"));
    }
}

/// `f(a, b)` → `f(b, a)`: each pair of adjacent positional arguments that differ.
pub(super) fn swap_arguments(g: &mut Generator<'_>, node: Node<'_>) {
    let Some(positional) = positional_arguments(node) else { return };
    for pair in positional.windows(2) {
        let (a, b) = (pair[0], pair[1]);
        let (ta, tb) = (g.text(a).to_string(), g.text(b).to_string());
        if ta == tb {
            continue;
        }
        let between = &g.parsed.text()[a.end_byte()..b.start_byte()];
        let edit = Edit::replacement(a.start_byte()..b.end_byte(), format!("{tb}{between}{ta}"));
        g.add(Operator::ArgumentSwap, edit, format!("swap `{}` and `{}`", shorten(&ta), shorten(&tb)));
    }
}

/// `f(x)` → `f(x, name=self.name)` in a method (not `__init__`) of a class whose `__init__`
/// stores its parameter `name` as `self.name = name`, when the call passes no `name=` yet.
pub(super) fn forward_option(g: &mut Generator<'_>, call: Node<'_>) {
    let Some(arguments) = call.child_by_field_name("arguments").filter(|a| a.kind() == "argument_list") else {
        return;
    };
    let Some(method) = enclosing_function(call) else { return };
    let Some(class) = enclosing_class(method).filter(|c| enclosing_class(call).is_some_and(|i| i.id() == c.id()))
    else {
        return;
    };
    if method.child_by_field_name("name").is_some_and(|n| g.text(n) == "__init__") {
        return;
    }
    let mut cursor = arguments.walk();
    let args: Vec<Node<'_>> = arguments.named_children(&mut cursor).filter(|a| a.kind() != "comment").collect();
    let passed: Vec<String> = (args.iter())
        .filter(|a| a.kind() == "keyword_argument")
        .filter_map(|a| a.child_by_field_name("name").map(|n| g.text(n).to_string()))
        .collect();
    let close = arguments.end_byte() - 1;
    for name in stored_options(g, class) {
        if passed.contains(&name) {
            continue;
        }
        let text = if args.is_empty() { format!("{name}=self.{name}") } else { format!(", {name}=self.{name}") };
        let at = args.last().map_or(close, |a| a.end_byte());
        let description = format!("pass `{name}=self.{name}` to `{}`", shorten(g.text(call)));
        g.add(Operator::ForwardOption, Edit::insertion(at, text), description);
    }
}

/// The parameters of `class`'s `__init__` that it stores under their own name
/// (`self.name = name`), in parameter order.
fn stored_options(g: &Generator<'_>, class: Node<'_>) -> Vec<String> {
    let Some(body) = class.child_by_field_name("body") else { return Vec::new() };
    let mut cursor = body.walk();
    let init = body.named_children(&mut cursor).find_map(|n| {
        let def = if n.kind() == "decorated_definition" { n.child_by_field_name("definition")? } else { n };
        (def.kind() == "function_definition"
            && def.child_by_field_name("name").is_some_and(|n| g.text(n) == "__init__"))
        .then_some(def)
    });
    let Some(init) = init else { return Vec::new() };
    let body_text = init.child_by_field_name("body").map_or("", |b| g.text(b));
    let Some(params) = init.child_by_field_name("parameters") else { return Vec::new() };
    let mut cursor = params.walk();
    let names: Vec<String> = params
        .named_children(&mut cursor)
        .filter_map(|p| match p.kind() {
            "identifier" => Some(g.text(p).to_string()),
            "default_parameter" | "typed_default_parameter" | "typed_parameter" => {
                let name = p.child_by_field_name("name").or_else(|| p.named_child(0))?;
                (name.kind() == "identifier").then(|| g.text(name).to_string())
            }
            _ => None,
        })
        .filter(|n| n != "self")
        .collect();
    let stores = |n: &String| body_text.lines().any(|l| l.trim() == format!("self.{n} = {n}"));
    names.into_iter().filter(stores).collect()
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::variants;
    use super::*;

    #[test]
    fn call_arguments_are_swapped() {
        let v = variants("def f(a, b):\n    return g(a, b, k=1)\n", 2, Operator::ArgumentSwap);
        assert_eq!(v, ["return g(b, a, k=1)"]);
    }

    #[test]
    fn operands_of_non_commutative_operators_are_swapped() {
        let v = variants("def f(a, b):\n    return a - b * 2\n", 2, Operator::ArgumentSwap);
        assert_eq!(v, ["return b * 2 - a"]);
        let v = variants("def f(s, c):\n    s = s + c\n", 2, Operator::ArgumentSwap);
        assert_eq!(v, ["s = c + s"]);
        // `*` is commutative; equal operands are not swapped.
        assert!(variants("def f(a, b):\n    return a * b\n", 2, Operator::ArgumentSwap).is_empty());
        assert!(variants("def f(a):\n    return a - a\n", 2, Operator::ArgumentSwap).is_empty());
    }

    #[test]
    fn an_option_the_object_stores_is_passed_on_to_calls_of_its_methods() {
        let src = "class Patch:\n    def __init__(self, ops, pointer_cls=Pointer, strict=False):\n        self.ops = ops\n        self.strict = strict and ops\n        self.pointer_cls = pointer_cls\n\n    def get(self, op):\n        cls = self.ops[op]\n        return cls(op, strict=True)\n\n    def empty(self):\n        return make()\n";
        let v = variants(src, 9, Operator::ForwardOption);
        assert_eq!(
            v,
            ["return cls(op, strict=True, ops=self.ops)", "return cls(op, strict=True, pointer_cls=self.pointer_cls)"]
        );
        let v = variants(src, 12, Operator::ForwardOption);
        assert_eq!(v, ["return make(ops=self.ops)", "return make(pointer_cls=self.pointer_cls)"]);
        // `strict` is not stored as given; nothing in `__init__` itself or outside a class.
        assert!(variants(src, 3, Operator::ForwardOption).is_empty());
        assert!(variants("def f(a):\n    return g(a)\n", 2, Operator::ForwardOption).is_empty());
    }
}

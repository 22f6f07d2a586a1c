//! Seeded, type-directed mutation of JSON test inputs into extra inputs for behaviour comparison.

use crate::rng::Rng;
use serde_json::{Number, Value};
use std::collections::HashSet;

/// Deepest nesting level that is mutated recursively.
const MAX_DEPTH: usize = 6;
/// Integers beyond this magnitude are not grown further (keeps generated inputs cheap).
const BIG: i64 = 1 << 40;

/// Up to `count` distinct argument lists derived from `cases` (each an argument list), none equal
/// to an original. Deterministic for a given `seed`; the arity of every case is preserved.
#[must_use]
pub fn generate(cases: &[Vec<Value>], seed: u64, count: usize) -> Vec<Vec<Value>> {
    let mut rng = Rng::new(seed);
    let mut seen: HashSet<String> = cases.iter().map(|c| key(c)).collect();
    let mut out = Vec::new();
    let candidates: Vec<&Vec<Value>> = cases.iter().filter(|c| !c.is_empty()).collect();
    if candidates.is_empty() {
        return out;
    }
    let mut attempts = 0;
    while out.len() < count && attempts < count * 20 {
        attempts += 1;
        let base = candidates[rng.below(candidates.len())];
        let mut args = base.clone();
        // Mutate at least one argument; each other one with probability 1/3.
        let forced = rng.below(args.len());
        for (i, arg) in args.iter_mut().enumerate() {
            if i == forced || rng.below(3) == 0 {
                *arg = mutate(arg, &mut rng, 0);
            }
        }
        if seen.insert(key(&args)) {
            out.push(args);
        }
    }
    out
}

fn key(args: &[Value]) -> String {
    serde_json::to_string(args).unwrap_or_default()
}

/// One type-directed mutation of `value` (numbers, booleans, strings, lists, objects; nested values
/// recursively).
#[must_use]
pub fn mutate(value: &Value, rng: &mut Rng, depth: usize) -> Value {
    match value {
        Value::Bool(b) => Value::Bool(!b),
        Value::Number(n) => mutate_number(n, rng),
        Value::String(s) => Value::String(mutate_string(s, rng)),
        Value::Array(items) => Value::Array(mutate_list(items, rng, depth)),
        Value::Object(map) => {
            let mut map = map.clone();
            if !map.is_empty() && depth < MAX_DEPTH {
                let k = rng.below(map.len());
                if let Some((_, v)) = map.iter_mut().nth(k) {
                    *v = mutate(v, rng, depth + 1);
                }
            }
            Value::Object(map)
        }
        Value::Null => Value::Null,
    }
}

fn mutate_number(n: &Number, rng: &mut Rng) -> Value {
    if let Some(i) = n.as_i64() {
        let small = i.abs() < BIG;
        let offset = i64::try_from(2 + rng.below(9)).unwrap_or(2);
        let out = match rng.below(8) {
            0 => i.saturating_add(1),
            1 => i.saturating_sub(1),
            2 => 0,
            3 => i.checked_neg().unwrap_or(i),
            4 if small => i.saturating_mul(2).saturating_add(1),
            5 if small => i.saturating_add(offset),
            6 => i.saturating_sub(offset),
            _ => -offset,
        };
        return Value::from(out);
    }
    if let Some(f) = n.as_f64() {
        let out = match rng.below(6) {
            0 => f + 1.0,
            1 => f - 1.0,
            2 => 0.0,
            3 => -f,
            4 => f * 2.0,
            _ => f / 2.0,
        };
        return Number::from_f64(out).map_or(Value::Number(n.clone()), Value::Number);
    }
    Value::Number(n.clone())
}

fn mutate_string(s: &str, rng: &mut Rng) -> String {
    let mut chars: Vec<char> = s.chars().collect();
    match rng.below(6) {
        0 => chars.clear(),
        1 if !chars.is_empty() => {
            chars.remove(rng.below(chars.len()));
        }
        2 if !chars.is_empty() => {
            let i = rng.below(chars.len());
            chars.insert(i, chars[i]);
        }
        3 if chars.len() >= 2 => {
            let i = rng.below(chars.len() - 1);
            chars.swap(i, i + 1);
        }
        4 => chars.reverse(),
        _ => {
            let letters = b"abcxyz ";
            chars.push(char::from(letters[rng.below(letters.len())]));
        }
    }
    chars.into_iter().collect()
}

fn mutate_list(items: &[Value], rng: &mut Rng, depth: usize) -> Vec<Value> {
    let mut items = items.to_vec();
    if items.is_empty() {
        return items;
    }
    match rng.below(7) {
        0 => shuffle(&mut items, rng),
        1 => items.truncate(rng.below(items.len())),
        2 => {
            // Extend with mutated copies of existing elements.
            for _ in 0..=rng.below(3) {
                let model = items[rng.below(items.len())].clone();
                let extra = if depth < MAX_DEPTH { mutate(&model, rng, depth + 1) } else { model };
                let at = rng.below(items.len() + 1);
                items.insert(at, extra);
            }
        }
        3 => items.clear(),
        4 => items.reverse(),
        _ if depth < MAX_DEPTH => {
            let i = rng.below(items.len());
            items[i] = mutate(&items[i], rng, depth + 1);
        }
        _ => shuffle(&mut items, rng),
    }
    items
}

fn shuffle(items: &mut [Value], rng: &mut Rng) {
    for i in (1..items.len()).rev() {
        let j = rng.below(i + 1);
        items.swap(i, j);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cases() -> Vec<Vec<Value>> {
        vec![
            vec![json!([3, 1, 4]), json!(2)],
            vec![json!("hello"), json!(true)],
            vec![json!([[1, 2], [3]]), json!({"k": 5})],
        ]
    }

    #[test]
    fn generation_is_deterministic_for_a_seed() {
        assert_eq!(generate(&cases(), 7, 40), generate(&cases(), 7, 40));
        assert_ne!(generate(&cases(), 7, 40), generate(&cases(), 8, 40));
    }

    #[test]
    fn generated_inputs_are_distinct_new_and_keep_arity() {
        let originals = cases();
        let out = generate(&originals, 1, 60);
        assert!(out.len() >= 30, "only {} inputs", out.len());
        let keys: HashSet<String> = out.iter().map(|a| key(a)).collect();
        assert_eq!(keys.len(), out.len());
        for args in &out {
            assert!(!originals.contains(args));
            assert_eq!(args.len(), 2);
        }
    }

    #[test]
    fn mutations_are_type_directed() {
        let mut rng = Rng::new(3);
        for _ in 0..200 {
            assert!(mutate(&json!(5), &mut rng, 0).is_i64());
            assert!(mutate(&json!(2.5), &mut rng, 0).is_f64());
            assert!(mutate(&json!("ab"), &mut rng, 0).is_string());
            assert!(mutate(&json!(false), &mut rng, 0).as_bool() == Some(true));
            let list = mutate(&json!([1, 2, 3]), &mut rng, 0);
            assert!(list.as_array().is_some_and(|l| l.iter().all(Value::is_i64)), "{list}");
            let nested = mutate(&json!([[1], [2, 3]]), &mut rng, 0);
            assert!(nested.as_array().is_some_and(|l| l.iter().all(Value::is_array)), "{nested}");
        }
    }

    #[test]
    fn integer_mutations_include_zero_negatives_and_neighbours() {
        let mut rng = Rng::new(11);
        let seen: HashSet<i64> = (0..300).filter_map(|_| mutate(&json!(10), &mut rng, 0).as_i64()).collect();
        for expected in [0, 9, 11, -10, 21] {
            assert!(seen.contains(&expected), "{expected} never generated: {seen:?}");
        }
    }

    #[test]
    fn empty_cases_generate_nothing() {
        assert!(generate(&[], 1, 10).is_empty());
        assert!(generate(&[vec![]], 1, 10).is_empty());
    }
}

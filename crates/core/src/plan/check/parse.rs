//! The check's syntax tree and its recursive-descent parser (the grammar is in
//! docs/plan.md, "Hypotheses' checks"). Hand-written: the grammar is a dozen rules, and a
//! parser of our own places every error on the token it is about without a dependency.

use super::lex::{lex, Tok, Token, UnitSuffix};
use super::{CheckError, Span};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CmpOp {
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArithOp {
    Add,
    Sub,
    Mul,
    Div,
}

/// A name as written, with where it is.
#[derive(Debug, Clone, PartialEq)]
pub struct Word {
    pub text: String,
    pub span: Span,
}

/// An argument's value: a name (`feed-rs.indexed`, `first-breach`) or a number with its unit
/// (`120/s`).
#[derive(Debug, Clone, PartialEq)]
pub enum ArgValue {
    Name(Word),
    Number(f64, Option<UnitSuffix>, Span),
}

impl ArgValue {
    pub fn span(&self) -> Span {
        match self {
            ArgValue::Name(w) => w.span,
            ArgValue::Number(_, _, s) => *s,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct NamedArg {
    pub name: Word,
    pub value: ArgValue,
}

/// `cpu(database, at: first-breach, of: feed-rs.indexed)`.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    pub function: Word,
    /// The first, unnamed argument: a contender or a container role.
    pub subject: Option<ArgValue>,
    pub args: Vec<NamedArg>,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    Number(f64, Option<UnitSuffix>, Span),
    Call(Call),
    Neg(Box<Expr>, Span),
    Arith(ArithOp, Box<Expr>, Box<Expr>, Span),
    Compare(CmpOp, Box<Expr>, Box<Expr>, Span),
    Not(Box<Expr>, Span),
    And(Box<Expr>, Box<Expr>, Span),
    Or(Box<Expr>, Box<Expr>, Span),
}

impl Expr {
    /// Every call's span, in order of appearance.
    pub fn call_spans(&self) -> Vec<Span> {
        let mut out = Vec::new();
        self.collect_calls(&mut out);
        out
    }

    fn collect_calls(&self, out: &mut Vec<Span>) {
        match self {
            Expr::Call(c) => out.push(c.span),
            Expr::Number(..) => {}
            Expr::Neg(a, _) | Expr::Not(a, _) => a.collect_calls(out),
            Expr::Arith(_, a, b, _)
            | Expr::Compare(_, a, b, _)
            | Expr::And(a, b, _)
            | Expr::Or(a, b, _) => {
                a.collect_calls(out);
                b.collect_calls(out);
            }
        }
    }

    pub fn span(&self) -> Span {
        match self {
            Expr::Number(_, _, s)
            | Expr::Neg(_, s)
            | Expr::Arith(_, _, _, s)
            | Expr::Compare(_, _, _, s)
            | Expr::Not(_, s)
            | Expr::And(_, _, s)
            | Expr::Or(_, _, s) => *s,
            Expr::Call(c) => c.span,
        }
    }
}

/// Nesting deeper than this is refused; it bounds the recursion on hostile input.
const MAX_DEPTH: usize = 64;

/// Parses a check into its tree.
pub fn parse(src: &str) -> Result<Expr, CheckError> {
    let tokens = lex(src)?;
    if tokens.len() == 1 {
        return Err(CheckError::new(Span::new(0, 0), "the check is empty")
            .hint("write a comparison, e.g. `failed(svc) < 1%`, or leave `check` out"));
    }
    let mut p = Parser {
        tokens,
        at: 0,
        depth: 0,
    };
    let e = p.or()?;
    match p.peek() {
        Tok::End => Ok(e),
        t => Err(CheckError::new(
            p.span(),
            format!(
                "expected an operator or the end of the check, found {}",
                t.describe()
            ),
        )),
    }
}

struct Parser {
    tokens: Vec<Token>,
    at: usize,
    depth: usize,
}

fn join(a: Span, b: Span) -> Span {
    Span::new(a.start, b.end)
}

impl Parser {
    fn peek(&self) -> &Tok {
        // The last token is `End` and `next` never moves past it.
        &self.tokens[self.at.min(self.tokens.len() - 1)].tok
    }
    fn span(&self) -> Span {
        self.tokens[self.at.min(self.tokens.len() - 1)].span
    }
    fn next(&mut self) -> Token {
        let t = self.tokens[self.at.min(self.tokens.len() - 1)].clone();
        if self.at + 1 < self.tokens.len() {
            self.at += 1;
        }
        t
    }
    fn keyword(&self, k: &str) -> bool {
        matches!(self.peek(), Tok::Ident(s) if s == k)
    }
    fn expect(&mut self, want: Tok, what: &str) -> Result<Token, CheckError> {
        if *self.peek() == want {
            return Ok(self.next());
        }
        Err(CheckError::new(
            self.span(),
            format!("expected {what}, found {}", self.peek().describe()),
        ))
    }
    fn enter(&mut self) -> Result<(), CheckError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(CheckError::new(
                self.span(),
                format!("the check nests deeper than {MAX_DEPTH} levels"),
            ));
        }
        Ok(())
    }

    fn or(&mut self) -> Result<Expr, CheckError> {
        self.enter()?;
        let mut left = self.and()?;
        while self.keyword("or") {
            self.next();
            let right = self.and()?;
            let span = join(left.span(), right.span());
            left = Expr::Or(Box::new(left), Box::new(right), span);
        }
        self.depth -= 1;
        Ok(left)
    }

    fn and(&mut self) -> Result<Expr, CheckError> {
        let mut left = self.not()?;
        while self.keyword("and") {
            self.next();
            let right = self.not()?;
            let span = join(left.span(), right.span());
            left = Expr::And(Box::new(left), Box::new(right), span);
        }
        Ok(left)
    }

    fn not(&mut self) -> Result<Expr, CheckError> {
        if self.keyword("not") {
            let start = self.next().span;
            self.enter()?;
            let inner = self.not()?;
            self.depth -= 1;
            let span = join(start, inner.span());
            return Ok(Expr::Not(Box::new(inner), span));
        }
        self.comparison()
    }

    fn comparison(&mut self) -> Result<Expr, CheckError> {
        let left = self.sum()?;
        let op = match self.peek() {
            Tok::Lt => CmpOp::Lt,
            Tok::Le => CmpOp::Le,
            Tok::Gt => CmpOp::Gt,
            Tok::Ge => CmpOp::Ge,
            Tok::Eq => CmpOp::Eq,
            Tok::Ne => CmpOp::Ne,
            _ => return Ok(left),
        };
        self.next();
        let right = self.sum()?;
        if matches!(
            self.peek(),
            Tok::Lt | Tok::Le | Tok::Gt | Tok::Ge | Tok::Eq | Tok::Ne
        ) {
            return Err(CheckError::new(self.span(), "comparisons do not chain")
                .hint("write `a < b and b < c`"));
        }
        let span = join(left.span(), right.span());
        Ok(Expr::Compare(op, Box::new(left), Box::new(right), span))
    }

    fn sum(&mut self) -> Result<Expr, CheckError> {
        let mut left = self.product()?;
        loop {
            let op = match self.peek() {
                Tok::Plus => ArithOp::Add,
                Tok::Minus => ArithOp::Sub,
                _ => return Ok(left),
            };
            self.next();
            let right = self.product()?;
            let span = join(left.span(), right.span());
            left = Expr::Arith(op, Box::new(left), Box::new(right), span);
        }
    }

    fn product(&mut self) -> Result<Expr, CheckError> {
        let mut left = self.unary()?;
        loop {
            let op = match self.peek() {
                Tok::Star => ArithOp::Mul,
                Tok::Slash => ArithOp::Div,
                _ => return Ok(left),
            };
            self.next();
            let right = self.unary()?;
            let span = join(left.span(), right.span());
            left = Expr::Arith(op, Box::new(left), Box::new(right), span);
        }
    }

    fn unary(&mut self) -> Result<Expr, CheckError> {
        if *self.peek() == Tok::Minus {
            let start = self.next().span;
            self.enter()?;
            let inner = self.unary()?;
            self.depth -= 1;
            let span = join(start, inner.span());
            return Ok(Expr::Neg(Box::new(inner), span));
        }
        self.primary()
    }

    fn primary(&mut self) -> Result<Expr, CheckError> {
        let t = self.next();
        match t.tok {
            Tok::Number(v, u) => Ok(Expr::Number(v, u, t.span)),
            Tok::LParen => {
                let inner = self.or()?;
                let close = self.expect(Tok::RParen, "`)`")?;
                // The parentheses are part of the span, so errors about the group cover them.
                Ok(regroup(inner, join(t.span, close.span)))
            }
            Tok::Ident(name) if matches!(name.as_str(), "and" | "or" | "not") => Err(
                CheckError::new(t.span, format!("expected a value, found `{name}`")),
            ),
            Tok::Ident(name) => {
                let function = Word {
                    text: name,
                    span: t.span,
                };
                if *self.peek() != Tok::LParen {
                    return Err(CheckError::new(
                        t.span,
                        format!("`{}` is not a value", function.text),
                    )
                    .hint("a name stands inside a metric function, e.g. `saturation(feed-rs)`"));
                }
                self.call(function)
            }
            other => Err(CheckError::new(
                t.span,
                format!("expected a value, found {}", other.describe()),
            )),
        }
    }

    fn call(&mut self, function: Word) -> Result<Expr, CheckError> {
        self.expect(Tok::LParen, "`(`")?;
        let mut subject = None;
        let mut args: Vec<NamedArg> = Vec::new();
        let mut first = true;
        while *self.peek() != Tok::RParen {
            if !first {
                self.expect(Tok::Comma, "`,` or `)`")?;
            }
            let value = self.arg_value()?;
            if *self.peek() == Tok::Colon {
                let ArgValue::Name(name) = value else {
                    return Err(CheckError::new(
                        self.span(),
                        "expected `,` or `)`, found `:`",
                    ));
                };
                self.next();
                let value = self.arg_value()?;
                if let Some(prev) = args.iter().find(|a| a.name.text == name.text) {
                    return Err(CheckError::new(
                        name.span,
                        format!("the argument `{}` is given twice", prev.name.text),
                    ));
                }
                args.push(NamedArg { name, value });
            } else if first {
                subject = Some(value);
            } else {
                return Err(CheckError::new(
                    value.span(),
                    "only the first argument goes without a name",
                )
                .hint("name it, e.g. `profile: baseline`"));
            }
            first = false;
        }
        let close = self.next().span;
        let span = join(function.span, close);
        Ok(Expr::Call(Call {
            function,
            subject,
            args,
            span,
        }))
    }

    fn arg_value(&mut self) -> Result<ArgValue, CheckError> {
        let t = self.next();
        match t.tok {
            Tok::Ident(text) => Ok(ArgValue::Name(Word { text, span: t.span })),
            Tok::Number(v, u) => Ok(ArgValue::Number(v, u, t.span)),
            other => Err(CheckError::new(
                t.span,
                format!("expected an argument, found {}", other.describe()),
            )),
        }
    }
}

/// The same expression with the span of its parentheses.
fn regroup(e: Expr, span: Span) -> Expr {
    match e {
        Expr::Number(v, u, _) => Expr::Number(v, u, span),
        Expr::Call(mut c) => {
            c.span = span;
            Expr::Call(c)
        }
        Expr::Neg(a, _) => Expr::Neg(a, span),
        Expr::Arith(o, a, b, _) => Expr::Arith(o, a, b, span),
        Expr::Compare(o, a, b, _) => Expr::Compare(o, a, b, span),
        Expr::Not(a, _) => Expr::Not(a, span),
        Expr::And(a, b, _) => Expr::And(a, b, span),
        Expr::Or(a, b, _) => Expr::Or(a, b, span),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tree in prefix form, for short assertions.
    fn show(e: &Expr) -> String {
        match e {
            Expr::Number(v, u, _) => format!("{v}{}", u.map_or("", |u| u.text())),
            Expr::Call(c) => {
                let mut parts = Vec::new();
                if let Some(s) = &c.subject {
                    parts.push(value(s));
                }
                for a in &c.args {
                    parts.push(format!("{}:{}", a.name.text, value(&a.value)));
                }
                format!("{}({})", c.function.text, parts.join(","))
            }
            Expr::Neg(a, _) => format!("(neg {})", show(a)),
            Expr::Arith(o, a, b, _) => format!("({o:?} {} {})", show(a), show(b)),
            Expr::Compare(o, a, b, _) => format!("({o:?} {} {})", show(a), show(b)),
            Expr::Not(a, _) => format!("(not {})", show(a)),
            Expr::And(a, b, _) => format!("(and {} {})", show(a), show(b)),
            Expr::Or(a, b, _) => format!("(or {} {})", show(a), show(b)),
        }
    }
    fn value(v: &ArgValue) -> String {
        match v {
            ArgValue::Name(w) => w.text.clone(),
            ArgValue::Number(n, u, _) => format!("{n}{}", u.map_or("", |u| u.text())),
        }
    }
    fn tree(s: &str) -> String {
        show(&parse(s).unwrap())
    }

    #[test]
    fn precedence_and_associativity() {
        assert_eq!(
            tree("saturation(feed-rs.indexed) >= 5 * saturation(feed-rs.production)"),
            "(Ge saturation(feed-rs.indexed) (Mul 5 saturation(feed-rs.production)))"
        );
        assert_eq!(
            tree("a() < 1 or b() < 2 and not c() < 3"),
            "(or (Lt a() 1) (and (Lt b() 2) (not (Lt c() 3))))"
        );
        assert_eq!(
            tree("1 - 2 - 3 < 4 / 2 / 1"),
            "(Lt (Sub (Sub 1 2) 3) (Div (Div 4 2) 1))"
        );
        assert_eq!(tree("-(1 + 2) * 3 == 1"), "(Eq (Mul (neg (Add 1 2)) 3) 1)");
        assert_eq!(
            tree("(a() < 1 or b() < 1) and c() > 1"),
            "(and (or (Lt a() 1) (Lt b() 1)) (Gt c() 1))"
        );
    }

    #[test]
    fn calls_take_a_subject_and_named_arguments() {
        assert_eq!(
            tree("cpu(database, at: first-breach, of: feed-rs.indexed) >= 90%"),
            "(Ge cpu(database,at:first-breach,of:feed-rs.indexed) 90%)"
        );
        assert_eq!(
            tree("cpu(replicas, at: 120/s) < 1%"),
            "(Lt cpu(replicas,at:120/s) 1%)"
        );
        assert_eq!(tree("f(profile: x) < 1"), "(Lt f(profile:x) 1)");
        assert_eq!(tree("f() < 1"), "(Lt f() 1)");
    }

    #[test]
    fn spans_cover_what_they_are_about() {
        let e = parse("f(a) >= (1 + 2)").unwrap();
        let Expr::Compare(_, l, r, s) = e else {
            panic!()
        };
        assert_eq!((l.span().start, l.span().end), (0, 4));
        assert_eq!((r.span().start, r.span().end), (8, 15));
        assert_eq!((s.start, s.end), (0, 15));
    }

    #[test]
    fn syntax_errors_are_placed() {
        let at = |s: &str| {
            let e = parse(s).unwrap_err();
            (e.span.start, e.message)
        };
        assert_eq!(at("").1, "the check is empty");
        assert_eq!(
            at("f(a) <"),
            (6, "expected a value, found the end of the check".into())
        );
        assert_eq!(
            at("f(a) < 1 2"),
            (
                9,
                "expected an operator or the end of the check, found a number".into()
            )
        );
        assert_eq!(at("1 < 2 < 3"), (6, "comparisons do not chain".into()));
        assert_eq!(
            at("f(a, b) < 1"),
            (5, "only the first argument goes without a name".into())
        );
        assert_eq!(
            at("f(a, x: 1, x: 2) < 1"),
            (11, "the argument `x` is given twice".into())
        );
        assert_eq!(
            at("f(a b) < 1"),
            (4, "expected `,` or `)`, found `b`".into())
        );
        assert_eq!(at("x < 1").1, "`x` is not a value");
        assert_eq!(
            at("(f(a) < 1").1,
            "expected `)`, found the end of the check"
        );
        assert_eq!(at("f(a) < and").1, "expected a value, found `and`");
        assert!(parse(&"(".repeat(100)).is_err());
        assert!(parse(&"-".repeat(100)).is_err());
        assert!(parse(&"not ".repeat(100)).is_err());
    }
}

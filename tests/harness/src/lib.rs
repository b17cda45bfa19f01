//! `#[root_test]`: one policy for every test that needs root (network
//! namespaces, veths, xfrm, a QEMU guest).
//!
//! - Built by a user who is not root (and not under `CI=true`), the test is
//!   `#[ignore = "needs root …"]`: libtest reports it as ignored, with the
//!   reason, never as a pass. (`build.rs` sets `cfg(spx_root)` when the
//!   build runs as root or under `CI=true`.)
//! - Under `CI=true` every root test must run: one that finds itself
//!   without root fails (`support::root_or_skip` panics there).
//! - Otherwise (built as root, run as another user) the runtime check
//!   prints the skip reason and returns.
//!
//! No dependencies: the attribute only needs the function's name, so it
//! reads the tokens itself.

use proc_macro::{Delimiter, Group, Literal, Punct, Spacing, TokenStream, TokenTree};

/// Mark a test that needs root. Use instead of `#[test]`:
///
/// ```ignore
/// #[root_test]
/// fn a_veth_pair_carries_jumbo() {
///     let ns = Netns::new();
/// }
/// ```
#[proc_macro_attribute]
pub fn root_test(attr: TokenStream, item: TokenStream) -> TokenStream {
    if !attr.is_empty() {
        return error("#[root_test] takes no arguments");
    }
    let mut tokens: Vec<TokenTree> = item.into_iter().collect();
    let name = tokens.windows(2).find_map(|w| match (&w[0], &w[1]) {
        (TokenTree::Ident(f), TokenTree::Ident(n)) if f.to_string() == "fn" => Some(n.to_string()),
        _ => None,
    });
    let Some(name) = name else {
        return error("#[root_test] goes on a test function");
    };
    let Some(TokenTree::Group(body)) = tokens.pop() else {
        return error("#[root_test] goes on a test function with a body");
    };
    if body.delimiter() != Delimiter::Brace {
        return error("#[root_test] goes on a test function with a body");
    }
    let guard: TokenStream = format!(
        "if !crate::support::root_or_skip({}) {{ return; }}",
        Literal::string(&name)
    )
    .parse()
    .expect("the guard parses");
    let mut inner = guard;
    inner.extend(body.stream());
    let mut new_body = Group::new(Delimiter::Brace, inner);
    new_body.set_span(body.span());
    let attrs: TokenStream = "#[test] #[cfg_attr(not(spx_root), ignore = \"needs root (network namespaces): run as root, or with CI=true where it must run\")]"
        .parse()
        .expect("the attributes parse");
    let mut out = attrs;
    out.extend(tokens);
    out.extend([TokenTree::Group(new_body)]);
    out
}

fn error(message: &str) -> TokenStream {
    let mut out: TokenStream = "::core::compile_error!".parse().expect("parses");
    let mut args = TokenStream::new();
    args.extend([TokenTree::Literal(Literal::string(message))]);
    out.extend([
        TokenTree::Group(Group::new(Delimiter::Parenthesis, args)),
        TokenTree::Punct(Punct::new(';', Spacing::Alone)),
    ]);
    out
}

//! [`Ctxt`]: collects every error found in one derive input, so a single
//! build reports all of the user's mistakes at once.

use quote::ToTokens;
use std::cell::RefCell;
use std::fmt::Display;
use std::thread;

/// Collects errors while the input is parsed and checked.
///
/// Dropping a `Ctxt` without calling [`check`](Ctxt::check) panics: an
/// error that was recorded but never looked at would be silently lost.
pub struct Ctxt {
    /// `None` once `check` has run, so that a forgotten check is caught.
    errors: RefCell<Option<Vec<syn::Error>>>,
}

impl Ctxt {
    /// An empty context; it must be [`check`](Ctxt::check)ed before it drops.
    pub fn new() -> Self {
        Ctxt {
            errors: RefCell::new(Some(Vec::new())),
        }
    }

    /// Records an error whose span covers the tokens of `obj`.
    pub fn error_spanned_by<A: ToTokens, T: Display>(&self, obj: A, msg: T) {
        // `into_token_stream` keeps this generic function from being
        // monomorphized into many copies of `syn::Error::new_spanned`.
        self.syn_error(syn::Error::new_spanned(obj.into_token_stream(), msg));
    }

    /// Records an error produced by syn (for example by a failed parse).
    pub fn syn_error(&self, error: syn::Error) {
        self.errors
            .borrow_mut()
            .as_mut()
            .expect("Ctxt used after check")
            .push(error);
    }

    /// How many errors have been recorded so far (so a parser can tell
    /// whether its own part of the input produced any).
    pub fn error_count(&self) -> usize {
        self.errors.borrow().as_ref().map_or(0, Vec::len)
    }

    /// Consumes the context: `Ok` if nothing was recorded, otherwise all
    /// the errors combined into one (each keeps its own span).
    pub fn check(self) -> Result<(), syn::Error> {
        let errors = self.errors.borrow_mut().take().expect("Ctxt checked twice");
        let mut errors = errors.into_iter();
        let Some(mut combined) = errors.next() else {
            return Ok(());
        };
        for error in errors {
            combined.combine(error);
        }
        Err(combined)
    }

    /// Consumes the context when the input was rejected outright with
    /// `error` (no model could be built): every error recorded so far, then
    /// `error`, so the user still sees all of them in one build.
    pub fn check_rejected(self, error: syn::Error) -> syn::Error {
        match self.check() {
            Ok(()) => error,
            Err(mut combined) => {
                combined.combine(error);
                combined
            }
        }
    }
}

impl Drop for Ctxt {
    fn drop(&mut self) {
        assert!(
            thread::panicking() || self.errors.borrow().is_none(),
            "forgot to check for errors"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::Ctxt;
    use proc_macro2::Span;

    #[test]
    fn check_combines_every_error() {
        let cx = Ctxt::new();
        cx.syn_error(syn::Error::new(Span::call_site(), "first"));
        cx.syn_error(syn::Error::new(Span::call_site(), "second"));
        let messages: Vec<String> = cx
            .check()
            .unwrap_err()
            .into_iter()
            .map(|e| e.to_string())
            .collect();
        assert_eq!(messages, ["first", "second"]);
    }

    #[test]
    fn a_rejection_comes_after_the_recorded_errors() {
        let cx = Ctxt::new();
        cx.syn_error(syn::Error::new(Span::call_site(), "attribute"));
        let rejected = syn::Error::new(Span::call_site(), "union");
        let messages: Vec<String> = cx
            .check_rejected(rejected)
            .into_iter()
            .map(|e| e.to_string())
            .collect();
        assert_eq!(messages, ["attribute", "union"]);
    }

    #[test]
    fn check_without_errors_is_ok() {
        assert!(Ctxt::new().check().is_ok());
    }

    #[test]
    #[should_panic(expected = "forgot to check for errors")]
    fn dropping_unchecked_panics() {
        drop(Ctxt::new());
    }
}

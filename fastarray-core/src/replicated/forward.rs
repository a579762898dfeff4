//! `forward_to_array!`: the methods a `Replicated` object shares with
//! `FastArray`, each defined once, as a call of the array's method on the
//! object's one-item array.

/// Methods of [`Replicated`] that are the [`FastArray`] method of the same
/// name on the object's one-item array, from one list: each signature
/// gives the method, whose doc is a line linking to the array's method
/// (which says what it does) and the doc lines given with it (an object's
/// example; start them with an empty `///` line), and whose body calls the
/// array's method with the same arguments.
macro_rules! forward_to_array {
    () => {};
    (
        $(#[doc = $doc:literal])*
        fn $name:ident(&self $(, $arg:ident: $ty:ty)* $(,)?) -> $ret:ty;
        $($rest:tt)*
    ) => {
        #[doc = concat!("As [`FastArray::", stringify!($name), "`], the object being the array's one item `#0`.")]
        $(#[doc = $doc])*
        pub fn $name(&self $(, $arg: $ty)*) -> $ret {
            self.item.$name($($arg),*)
        }
        forward_to_array!($($rest)*);
    };
    (
        $(#[doc = $doc:literal])*
        fn $name:ident(&mut self $(, $arg:ident: $ty:ty)* $(,)?) -> $ret:ty;
        $($rest:tt)*
    ) => {
        #[doc = concat!("As [`FastArray::", stringify!($name), "`], the object being the array's one item `#0`.")]
        $(#[doc = $doc])*
        pub fn $name(&mut self $(, $arg: $ty)*) -> $ret {
            self.item.$name($($arg),*)
        }
        forward_to_array!($($rest)*);
    };
}

pub(super) use forward_to_array;

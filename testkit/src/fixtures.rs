//! Item types the integration tests share: a squad whose members are an
//! array inside it, in two shapes (members with a 4-bit rank, or with hit
//! points only). The wire-exact tests count these types' bits: change a
//! field and their expected sizes change.

/// Members with hit points and a 4-bit rank.
pub mod ranked {
    use fastarray::{FastArray, Replicate};

    /// A squad member.
    #[derive(Replicate, Clone, Debug, PartialEq)]
    pub struct Member {
        /// Hit points.
        pub hp: u16,
        /// Rank, in 4 bits.
        #[replicate(bits = 4)]
        pub rank: u8,
    }

    /// A squad: a tag and its members, an array inside the item.
    #[derive(Replicate, Clone, Debug, PartialEq)]
    pub struct Squad {
        /// The squad's tag.
        pub tag: u8,
        /// Its members.
        #[replicate(array)]
        pub members: FastArray<Member>,
    }

    /// A squad tagged `tag` with `members` members of rank 1, their hit
    /// points 0, 1, 2 and on.
    pub fn squad(tag: u8, members: u16) -> Squad {
        let mut squad = Squad {
            tag,
            members: FastArray::new(),
        };
        for hp in 0..members {
            squad.members.push(Member { hp, rank: 1 });
        }
        squad
    }
}

/// Members with hit points only.
pub mod plain {
    use fastarray::{FastArray, Replicate};

    /// A squad member.
    #[derive(Replicate, Clone, Debug, PartialEq)]
    pub struct Member {
        /// Hit points.
        pub hp: u16,
    }

    /// A squad: a tag and its members, an array inside the item.
    #[derive(Replicate, Clone, Debug, Default, PartialEq)]
    pub struct Squad {
        /// The squad's tag.
        pub tag: u8,
        /// Its members.
        #[replicate(array)]
        pub members: FastArray<Member>,
    }
}

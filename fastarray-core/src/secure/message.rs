//! The handshake's messages on the wire: request, challenge, response.
//! All integers little-endian.

use super::error::HandshakeError;
pub(crate) use super::kind::PacketKind;
pub(crate) use super::protection::Protection;

/// The wire version of the secure path, in every request and response.
pub(crate) const VERSION: u8 = 1;

/// Reads little-endian `u64`s from a message whose length was checked.
struct Fields<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Fields<'_> {
    fn u64(&mut self) -> u64 {
        let mut word = [0; 8];
        word.copy_from_slice(&self.bytes[self.at..self.at + 8]);
        self.at += 8;
        u64::from_le_bytes(word)
    }

    fn bytes<const N: usize>(&mut self) -> [u8; N] {
        let mut out = [0; N];
        out.copy_from_slice(&self.bytes[self.at..self.at + N]);
        self.at += N;
        out
    }
}

/// Refuses `message` unless it is of `kind` and `expected` bytes long.
fn check(message: &[u8], kind: PacketKind, expected: usize) -> Result<(), HandshakeError> {
    match PacketKind::of(message) {
        Some(found) if found == kind => {}
        Some(found) => return Err(HandshakeError::UnexpectedKind { kind: found }),
        None => {
            return Err(HandshakeError::UnknownKind {
                byte: message.first().copied(),
            });
        }
    }
    if message.len() != expected {
        return Err(HandshakeError::WrongLength {
            kind,
            expected,
            len: message.len(),
        });
    }
    Ok(())
}

/// The version and protection bytes of a request or response.
fn read_head(message: &[u8], kind: PacketKind) -> Result<Protection, HandshakeError> {
    if message[1] != VERSION {
        return Err(HandshakeError::Malformed {
            kind,
            reason: "another wire version",
        });
    }
    Protection::from_byte(message[2]).ok_or(HandshakeError::Malformed {
        kind,
        reason: "an unknown protection",
    })
}

/// Who asks, for what: what a request and its response both carry, and
/// what the server's token is a MAC of (with the client's address and
/// the challenge's time).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Hello {
    pub(crate) protection: Protection,
    /// The game's protocol id (and version).
    pub(crate) protocol_id: u64,
    /// The client as the game's login service knows it (0: unnamed).
    pub(crate) client_id: u64,
    /// The client's random number for this attempt.
    pub(crate) nonce: u64,
}

impl Hello {
    /// The bytes after the kind: version, protection, protocol, client,
    /// nonce.
    const BYTES: usize = 2 + 3 * 8;

    fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&[VERSION, self.protection.byte()]);
        out.extend_from_slice(&self.protocol_id.to_le_bytes());
        out.extend_from_slice(&self.client_id.to_le_bytes());
        out.extend_from_slice(&self.nonce.to_le_bytes());
    }

    fn read(message: &[u8], kind: PacketKind) -> Result<(Self, Fields<'_>), HandshakeError> {
        let protection = read_head(message, kind)?;
        let mut fields = Fields {
            bytes: message,
            at: 3,
        };
        let hello = Self {
            protection,
            protocol_id: fields.u64(),
            client_id: fields.u64(),
            nonce: fields.u64(),
        };
        Ok((hello, fields))
    }
}

/// Client to server: a connect request, zero-padded to [`Self::BYTES`] so
/// that the challenge it gets back is never larger (no amplification).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Request(pub(crate) Hello);

impl Request {
    pub(crate) const BYTES: usize = 32;

    pub(crate) fn write(&self, out: &mut Vec<u8>) {
        let start = out.len();
        out.push(PacketKind::Request.byte());
        self.0.write(out);
        out.resize(start + Self::BYTES, 0);
    }

    pub(crate) fn read(message: &[u8]) -> Result<Self, HandshakeError> {
        check(message, PacketKind::Request, Self::BYTES)?;
        let (hello, _) = Hello::read(message, PacketKind::Request)?;
        if message[1 + Hello::BYTES..].iter().any(|&b| b != 0) {
            return Err(HandshakeError::Malformed {
                kind: PacketKind::Request,
                reason: "padding that is not zero",
            });
        }
        Ok(Self(hello))
    }
}

/// Server to client: the challenge, answering a request's nonce with the
/// time it was issued and the token (a MAC of the request, the client's
/// address and that time under the server's secret key).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Challenge {
    pub(crate) nonce: u64,
    pub(crate) issued_at: u64,
    pub(crate) token: [u8; 8],
}

impl Challenge {
    pub(crate) const BYTES: usize = 1 + 3 * 8;

    pub(crate) fn write(&self, out: &mut Vec<u8>) {
        out.push(PacketKind::Challenge.byte());
        out.extend_from_slice(&self.nonce.to_le_bytes());
        out.extend_from_slice(&self.issued_at.to_le_bytes());
        out.extend_from_slice(&self.token);
    }

    pub(crate) fn read(message: &[u8]) -> Result<Self, HandshakeError> {
        check(message, PacketKind::Challenge, Self::BYTES)?;
        let mut fields = Fields {
            bytes: message,
            at: 1,
        };
        Ok(Self {
            nonce: fields.u64(),
            issued_at: fields.u64(),
            token: fields.bytes(),
        })
    }
}

/// Client to server: the request again with the challenge echoed; with
/// encryption, a 16-byte proof that the client holds its key (a
/// Poly1305 tag over the rest of the message).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Response {
    pub(crate) hello: Hello,
    pub(crate) issued_at: u64,
    pub(crate) token: [u8; 8],
    pub(crate) proof: Option<[u8; 16]>,
}

impl Response {
    /// The length without a proof, which is also what the proof covers.
    pub(crate) const BYTES: usize = 1 + Hello::BYTES + 2 * 8;
    /// The proof's length.
    pub(crate) const PROOF: usize = 16;

    /// The message's length for `protection`.
    pub(crate) fn len(protection: Protection) -> usize {
        match protection {
            Protection::Token => Self::BYTES,
            Protection::Encrypted => Self::BYTES + Self::PROOF,
        }
    }

    /// Appends the message without its proof (the part a proof covers).
    pub(crate) fn write_unproven(&self, out: &mut Vec<u8>) {
        out.push(PacketKind::Response.byte());
        self.hello.write(out);
        out.extend_from_slice(&self.issued_at.to_le_bytes());
        out.extend_from_slice(&self.token);
    }

    pub(crate) fn read(message: &[u8]) -> Result<Self, HandshakeError> {
        let kind = PacketKind::Response;
        check(message, kind, message.len())?; // its kind, at any length
        if message.len() < 3 {
            return Err(HandshakeError::WrongLength {
                kind,
                expected: Self::BYTES,
                len: message.len(),
            });
        }
        check(message, kind, Self::len(read_head(message, kind)?))?;
        let (hello, mut fields) = Hello::read(message, kind)?;
        let issued_at = fields.u64();
        let token = fields.bytes();
        let proof = match hello.protection {
            Protection::Token => None,
            Protection::Encrypted => Some(fields.bytes()),
        };
        Ok(Self {
            hello,
            issued_at,
            token,
            proof,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hello(protection: Protection) -> Hello {
        Hello {
            protection,
            protocol_id: 0x1234_5678_9abc_def0,
            client_id: 42,
            nonce: 7,
        }
    }

    #[test]
    fn messages_round_trip_at_their_documented_sizes() {
        let mut out = Vec::new();
        Request(hello(Protection::Token)).write(&mut out);
        assert_eq!(out.len(), Request::BYTES);
        assert_eq!(Request::read(&out), Ok(Request(hello(Protection::Token))));

        let challenge = Challenge {
            nonce: 7,
            issued_at: 99,
            token: [1, 2, 3, 4, 5, 6, 7, 8],
        };
        out.clear();
        challenge.write(&mut out);
        assert_eq!(out.len(), 25);
        assert!(out.len() <= Request::BYTES, "no amplification");
        assert_eq!(Challenge::read(&out), Ok(challenge));

        for (protection, proof, len) in [
            (Protection::Token, None, 43),
            (Protection::Encrypted, Some([9; 16]), 59),
        ] {
            let response = Response {
                hello: hello(protection),
                issued_at: 99,
                token: [8; 8],
                proof,
            };
            out.clear();
            response.write_unproven(&mut out);
            out.extend(proof.iter().flatten());
            assert_eq!(out.len(), len);
            assert_eq!(Response::read(&out), Ok(response));
        }
    }

    #[test]
    fn every_truncation_and_bad_byte_is_a_typed_error() {
        let mut request = Vec::new();
        Request(hello(Protection::Token)).write(&mut request);
        let mut response = Vec::new();
        Response {
            hello: hello(Protection::Encrypted),
            issued_at: 1,
            token: [0; 8],
            proof: None,
        }
        .write_unproven(&mut response);
        response.extend_from_slice(&[0; 16]);
        for len in 0..request.len() {
            assert!(Request::read(&request[..len]).is_err());
        }
        for len in 0..response.len() {
            assert!(Response::read(&response[..len]).is_err());
        }
        for len in 0..Challenge::BYTES {
            assert!(Challenge::read(&[0xF2; Challenge::BYTES][..len]).is_err());
        }
        let mut bad = request.clone();
        bad[1] = VERSION + 1;
        assert!(matches!(
            Request::read(&bad),
            Err(HandshakeError::Malformed { .. })
        ));
        let mut bad = request.clone();
        bad[2] = 7;
        assert!(matches!(
            Request::read(&bad),
            Err(HandshakeError::Malformed { .. })
        ));
        let mut bad = request.clone();
        bad[31] = 1;
        assert!(matches!(
            Request::read(&bad),
            Err(HandshakeError::Malformed { .. })
        ));
        assert_eq!(
            Request::read(&response),
            Err(HandshakeError::UnexpectedKind {
                kind: PacketKind::Response
            })
        );
        assert_eq!(
            Request::read(&[0x00; 32]),
            Err(HandshakeError::UnknownKind { byte: Some(0) })
        );
    }
}

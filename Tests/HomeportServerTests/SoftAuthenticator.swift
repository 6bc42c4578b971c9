import Foundation
import HomeportCrypto
import HomeportWebAuthn
import HomeportWire
import Testing

/// An authenticator in software, for tests: it answers `navigator.credentials.create` and
/// `get` options as a browser with a security key would (`PublicKeyCredential.toJSON()`), with
/// an ES256 or Ed25519 key, and can be told to lie (another origin, no user verification, a
/// counter going back, a packed self-attestation).
final class SoftAuthenticator: @unchecked Sendable {
    enum Algorithm { case es256, edDSA }

    let credentialID: [UInt8]
    let algorithm: Algorithm
    private let p256: P256Key?
    private let ed25519: Ed25519Key?
    /// The counter it signs with next (0 stays 0: an authenticator that keeps none).
    var signCount: UInt32
    /// The user handle the credential was registered with.
    private(set) var userHandle: [UInt8]?

    init(_ algorithm: Algorithm = .es256, signCount: UInt32 = 1) throws {
        self.algorithm = algorithm
        credentialID = (0..<32).map { _ in UInt8.random(in: 0...255) }
        p256 = algorithm == .es256 ? try P256Key.generate() : nil
        ed25519 = algorithm == .edDSA ? try Ed25519Key.generate() : nil
        self.signCount = signCount
    }

    /// The COSE key it registers.
    var coseKey: [UInt8] {
        switch algorithm {
        case .es256:
            let point = p256!.publicKey
            return CBOR.map([
                .int(1): .int(2), .int(3): .int(-7), .int(-1): .int(1), .int(-2): .bytes(Array(point[1..<33])),
                .int(-3): .bytes(Array(point[33..<65])),
            ]).encoded
        case .edDSA:
            return CBOR.map([
                .int(1): .int(1), .int(3): .int(-8), .int(-1): .int(6), .int(-2): .bytes(ed25519!.publicKey),
            ])
            .encoded
        }
    }

    func sign(_ message: [UInt8]) throws -> [UInt8] {
        switch algorithm {
        case .es256: try P256Key.derSignature(fromRaw: p256!.sign(message))!
        case .edDSA: try ed25519!.sign(message)
        }
    }

    /// The authenticator data for `rpID`, with the flags asked for.
    func authenticatorData(rpID: String, verified: Bool, present: Bool = true, attested: Bool) -> [UInt8] {
        var flags: UInt8 = (present ? 0x01 : 0) | (verified ? 0x04 : 0)
        if attested { flags |= 0x40 }
        var data = Digest.sha256(Array(rpID.utf8)) + [flags] + withUnsafeBytes(of: signCount.bigEndian, Array.init)
        if attested {
            data +=
                [UInt8](repeating: 0, count: 16) + [UInt8(credentialID.count >> 8), UInt8(credentialID.count & 0xFF)]
            data += credentialID + coseKey
        }
        return data
    }

    static func clientData(type: String, challenge: String, origin: String) -> [UInt8] {
        Array(#"{"type":"\#(type)","challenge":"\#(challenge)","origin":"\#(origin)","crossOrigin":false}"#.utf8)
    }

    /// Answers creation options (`{"publicKey": {...}}` or the inner object) as a browser at `origin`.
    func register(
        _ options: [String: Any], origin: String, verified: Bool = true, rpID: String? = nil, packed: Bool = false
    ) throws -> [String: Any] {
        let publicKey = (options["publicKey"] as? [String: Any]) ?? options
        let challenge = try #require(publicKey["challenge"] as? String)
        let rp = try #require((publicKey["rp"] as? [String: Any])?["id"] as? String ?? rpID)
        userHandle = ((publicKey["user"] as? [String: Any])?["id"] as? String).flatMap(IdentityProof.readBase64URL)
        let clientData = Self.clientData(type: "webauthn.create", challenge: challenge, origin: origin)
        let authData = authenticatorData(rpID: rpID ?? rp, verified: verified, attested: true)
        var statement: [CBOR: CBOR] = [:]
        if packed {
            statement = [
                .text("alg"): .int(algorithm == .es256 ? -7 : -8),
                .text("sig"): .bytes(try sign(authData + Digest.sha256(clientData))),
            ]
        }
        let object = CBOR.map([
            .text("fmt"): .text(packed ? "packed" : "none"), .text("attStmt"): .map(statement),
            .text("authData"): .bytes(authData),
        ])
        let id = IdentityProof.base64URL(credentialID)
        return [
            "id": id, "rawId": id, "type": "public-key", "authenticatorAttachment": "cross-platform",
            "response": [
                "clientDataJSON": IdentityProof.base64URL(clientData),
                "attestationObject": IdentityProof.base64URL(object.encoded), "transports": ["usb"],
            ],
            "clientExtensionResults": ["credProps": ["rk": true]],
        ]
    }

    /// Answers request options as a browser at `origin`, counting up first.
    func assert(
        _ options: [String: Any], origin: String, verified: Bool = true, rpID: String? = nil, present: Bool = true
    ) throws -> [String: Any] {
        let publicKey = (options["publicKey"] as? [String: Any]) ?? options
        let challenge = try #require(publicKey["challenge"] as? String)
        let rp = try #require(rpID ?? publicKey["rpId"] as? String)
        if signCount != 0 { signCount += 1 }
        let clientData = Self.clientData(type: "webauthn.get", challenge: challenge, origin: origin)
        let authData = authenticatorData(rpID: rp, verified: verified, present: present, attested: false)
        let id = IdentityProof.base64URL(credentialID)
        var response: [String: Any] = [
            "clientDataJSON": IdentityProof.base64URL(clientData),
            "authenticatorData": IdentityProof.base64URL(authData),
            "signature": IdentityProof.base64URL(try sign(authData + Digest.sha256(clientData))),
        ]
        if let userHandle { response["userHandle"] = IdentityProof.base64URL(userHandle) }
        return ["id": id, "rawId": id, "type": "public-key", "response": response, "clientExtensionResults": [:]]
    }
}

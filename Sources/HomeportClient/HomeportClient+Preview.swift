import Foundation
import HomeportWire

/// A server as it presents itself before anyone signs in: what a sign-in sheet shows ("this is
/// BookOrbit, id 6f1c…, key SHA256:…") before the person types a password.
public struct ServerPreview: Sendable, Equatable {
    /// The address it answered at (an `http://` address that moved to HTTPS: the HTTPS one).
    public var address: ServerAddress
    /// Its identity: installation id, product, protocol version, and the key it proved.
    public var identity: ServerIdentity
    /// The fingerprint of the key it proved (`SHA256:…`), when it proves one.
    public var keyFingerprint: String?
    /// The key this device already keeps that installation under, when it is enrolled here.
    public var enrolledAs: String?
}

extension HomeportClient {
    /// What the server at `address` says it is — its identity read with the client's own
    /// transport, and the proof of its key checked — before any sign-in and without any
    /// credential. Nothing is stored. Throws when the address does not answer as a Homeport
    /// server (an HTML page, a redirect to another host, another product's answer, no answer).
    public func identify(at address: ServerAddress) async throws -> ServerPreview {
        try await identify(at: address, movedOnce: false)
    }

    private func identify(at address: ServerAddress, movedOnce: Bool) async throws -> ServerPreview {
        let outcome = await probe.probe(address, expected: nil)
        switch outcome {
        case .match(let identity):
            return ServerPreview(
                address: address, identity: identity,
                keyFingerprint: identity.publicKey.flatMap(InstallationKeyCheck.fingerprint),
                enrolledAs: directory.all.first { $0.instanceID == identity.instanceId }?.key)
        case .movedToHTTPS(let secure) where !movedOnce:
            return try await identify(at: secure, movedOnce: true)
        case .notAnAPI: throw ClientError.notAnAPI(address: address.url, answer: "an HTML page")
        case .offHostRedirect(let target): throw ClientError.offHostRedirect(address: address.url, target: target)
        case .unreachable(let reason): throw ClientError.unreachable(address: address.url, reason: reason)
        case .noAnswerInTime:
            throw ClientError.unreachable(address: address.url, reason: outcome.description)
        case .identityUnavailable, .unproven, .movedToHTTPS:
            throw ClientError.probeFailed(address: address.url, outcome: outcome.description)
        case .mismatch, .productMismatch, .notHomeport, .olderServer:
            throw ClientError.notHomeport(address: address.url, detail: outcome.description)
        }
    }

    /// Enrolls the server at `address` without an account: a record, signed out and with no
    /// email, whose installation key is the one it proved now (pinned as a sign-in pins it, and
    /// checked against a pairing link for that address), so an app can list the server before
    /// anyone signs in there; ``login(at:email:password:)`` at the same address signs in on it.
    ///
    /// An address of a server already enrolled (the same installation, or the same primary)
    /// returns that record unchanged: adding an address to a server is
    /// ``addAddress(_:to:)``'s, which verifies it.
    public func enroll(at address: ServerAddress) async throws -> ServerRecord {
        let preview = try await identify(at: address)
        // The primary of a server kept here that now answers as another installation: not this one.
        if let kept = directory.all.first(where: { $0.primary.url == preview.address.url }),
            let id = kept.instanceID, id != preview.identity.instanceId
        {
            throw ClientError.identityMismatch(address: preview.address.url, seen: preview.identity.instanceId)
        }
        try checkPairing(
            at: preview.address, instanceID: preview.identity.instanceId, publicKey: preview.identity.publicKey)
        var record = ServerRecord(
            instanceID: preview.identity.instanceId, product: preview.identity.product, email: "",
            primary: preview.address, alternatives: [], lastWinner: nil, signedOut: true, signedInPath: networkPath,
            protocolVersion: preview.identity.protocolVersion)
        record.publicKey = preview.identity.publicKey
        return try directory.insertIfAbsent(record)
    }
}

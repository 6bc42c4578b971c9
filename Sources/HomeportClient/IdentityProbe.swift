import Foundation
import HomeportWire

/// What an address answered to `GET /api/v1/server-identity`.
public enum ProbeOutcome: Sendable, Equatable, CustomStringConvertible {
    /// The enrolled installation — the same id, product and protocol version — or, when none is
    /// enrolled yet, a Homeport server.
    case match(ServerIdentity)
    /// Another installation.
    case mismatch(seen: InstanceID)
    /// The enrolled id, but another product name or protocol version than the ones enrolled.
    case productMismatch(product: String, protocolVersion: Int)
    /// The identity route answered 503 `identity_unavailable`: the server cannot read its identity now.
    case identityUnavailable
    /// A server that answered, but not with a Homeport identity.
    case notHomeport(String)
    /// No identity route (404): an older server; single-address behaviour.
    case olderServer
    /// An HTML page: an authentication proxy's sign-in page, not the API.
    case notAnAPI
    /// A redirect to another origin (not followed).
    case offHostRedirect(String)
    /// A redirect that names a new home (not followed): a plain-HTTP address that redirects to
    /// `https://` on its own host (a server that moved to HTTPS), or an HTTPS address that
    /// redirects to another `https://` origin (its canonical name: the redirect itself came over
    /// a validated connection). For the primary, the client probes the new address,
    /// credential-free, and makes it the primary only when it answers as the enrolled
    /// installation. Any other redirect is ``offHostRedirect(_:)``, never followed: a plain-HTTP
    /// answer can be anyone's on the path, and the installation id it would be checked against
    /// is public.
    case movedToHTTPS(ServerAddress)
    /// No answer (refused, TLS failure, too large).
    case unreachable(String)
    /// No answer within the probe's deadline: not an answer, so it cannot let the primary's
    /// standing trust win over a verified address that may still be the installation.
    case noAnswerInTime
    /// The enrolled id, product and protocol, without the proof of the installation key this
    /// device pinned (no key, another key, a signature that does not verify for this probe's
    /// challenge and host): an address that repeats what is public. Treated as another
    /// installation, and even a primary gets nothing.
    case unproven(String)

    /// A short description.
    public var description: String {
        switch self {
        case .match(let identity): "match (\(identity.instanceId))"
        case .mismatch(let seen): "another installation (\(seen))"
        case .productMismatch(let product, let version):
            "the enrolled id, but another product or protocol (\"\(product)\", protocol \(version))"
        case .identityUnavailable: "its identity cannot be read right now (503 identity_unavailable)"
        case .notHomeport(let detail): "not a Homeport server (\(detail))"
        case .olderServer: "older server without the identity route"
        case .notAnAPI: "an HTML page, not the API"
        case .offHostRedirect(let target): "redirect to another address (\(target))"
        case .movedToHTTPS(let address): "moved to \(address.url)"
        case .unreachable(let reason): "unreachable (\(reason))"
        case .noAnswerInTime: "no answer within the probe deadline"
        case .unproven(let why): "the installation's id without the proof of its key (\(why))"
        }
    }

    /// Whether the primary may keep the trust the user gave it after this answer: the address
    /// answered, from where it is (another id, no identity route, an unreadable identity, a proxy
    /// page), rather than not at all or from somewhere else. Such a primary is used only when every
    /// verified address ``refutes`` being the installation (see
    /// ``HomeportClient/chooseAddress(for:excluding:)``).
    var keepsPrimaryTrust: Bool {
        switch self {
        case .match, .mismatch, .productMismatch, .identityUnavailable, .notHomeport, .olderServer, .notAnAPI: true
        case .unreachable, .offHostRedirect, .movedToHTTPS, .noAnswerInTime, .unproven: false
        }
    }

    /// Whether the address answered, and not as the installation: only such an answer withdraws a
    /// verification. No answer (none within the deadline, a refused connection, a TLS failure, a
    /// 5xx) and `503 identity_unavailable` say nothing about who is there, so they keep it: losing it
    /// would leave the primary's standing trust unopposed on this path.
    public var refutes: Bool {
        switch self {
        case .mismatch, .productMismatch, .notHomeport, .olderServer, .notAnAPI, .offHostRedirect, .movedToHTTPS,
            .unproven:
            true
        case .match, .identityUnavailable, .unreachable, .noAnswerInTime: false
        }
    }

    /// Whether this is a match.
    public var isMatch: Bool {
        if case .match = self { return true }
        return false
    }
}

/// Asks an address who it is: no credential, no cookie, no stored state; redirects followed only
/// within the same origin; a byte limit and a total deadline.
public struct IdentityProbe: Sendable {
    let transport: any ClientTransport
    /// Total time one probe may take.
    public var deadline: Duration
    /// Largest identity answer read.
    public var byteLimit = 16 * 1024
    /// Same-origin redirects followed at most.
    public var maximumRedirects = 3

    /// Creates a probe.
    public init(transport: any ClientTransport, deadline: Duration = .seconds(3)) {
        self.transport = transport
        self.deadline = deadline
    }

    /// Probes `address` with a fresh challenge. With `expected` (the enrolled identity), only the
    /// same id, product and protocol version match, and when it holds a pinned key only an answer
    /// that proves that key for this challenge and this address's host; without it, any Homeport
    /// identity does, and a key it names must prove itself.
    ///
    /// Over HTTPS, a certificate whose key is the expected identity's pinned key is accepted with
    /// no certificate authority, as is one whose key hashes to `pin` (the SHA-256 a pairing link
    /// shows) when it is given.
    public func probe(_ address: ServerAddress, expected: ServerIdentity?, pin: [UInt8]? = nil) async -> ProbeOutcome {
        let challenge = InstallationKeyCheck.challenge()
        guard var url = address.url(HomeportPath.serverIdentity).flatMap({ Self.asking($0, challenge) }) else {
            return .notHomeport("bad URL")
        }
        let origin = address.origin
        let started = ContinuousClock.now
        for _ in 0...maximumRedirects {
            let response: ClientResponse
            do {
                var request = ClientRequest(
                    url: url, headers: ["Accept": "application/json"], byteLimit: byteLimit, deadline: deadline)
                // The installation may serve HTTPS with a certificate made from its key.
                request.pinnedKeySHA256 = pin ?? expected?.publicKey.flatMap(InstallationKeyCheck.digest)
                response = try await transport.send(request)
            } catch let error as ClientError {
                return error.isTimeout ? .noAnswerInTime : .unreachable(Self.reason(error))
            } catch {
                // Not the transport's own word: a failure that took the whole deadline is a timeout.
                if ContinuousClock.now - started >= deadline - .milliseconds(50) { return .noAnswerInTime }
                return .unreachable(String(describing: error))
            }
            if (300..<400).contains(response.status) {
                guard let location = response.headers["location"],
                    let next = URL(string: location, relativeTo: url)?.absoluteURL
                else { return .notHomeport("redirect without a location") }
                guard ServerAddress.origin(of: next) == origin else {
                    if let moved = Self.movedToHTTPS(from: address, to: next) { return .movedToHTTPS(moved) }
                    return .offHostRedirect(ServerAddress.origin(of: next) ?? ServerText.clean(location))
                }
                url = Self.asking(next, challenge) ?? next
                continue
            }
            return Self.classify(
                response, expected: expected, challenge: challenge, host: IdentityProof.host(of: url.host ?? "") ?? "")
        }
        return .notHomeport("too many redirects")
    }

    /// The address a server moved to: `next` when it is `https://` on another origin, and on the
    /// same host when `address` is plain HTTP (whose redirect anyone on the path could have
    /// written); an HTTPS address may name any other HTTPS origin (its canonical name). Its base
    /// is what precedes the identity route in `next` (or the old base path, when the redirect
    /// names another path). `nil` for any other redirect: nothing moves to plain HTTP.
    package static func movedToHTTPS(from address: ServerAddress, to next: URL) -> ServerAddress? {
        guard let old = URL(string: address.url), let oldScheme = old.scheme?.lowercased(),
            next.scheme?.lowercased() == "https", let host = next.host?.lowercased(),
            ServerAddress.origin(of: next) != address.origin,
            oldScheme == "https" || (oldScheme == "http" && host == old.host?.lowercased()),
            var components = URLComponents(url: next, resolvingAgainstBaseURL: true)
        else { return nil }
        let path = components.percentEncodedPath
        components.percentEncodedPath =
            path.hasSuffix(HomeportPath.serverIdentity)
            ? String(path.dropLast(HomeportPath.serverIdentity.count)) : old.path
        components.query = nil
        components.fragment = nil
        return components.string.flatMap { try? ServerAddress(parsing: $0) }
    }

    /// `url` asking `challenge` (in place of any challenge it carried).
    static func asking(_ url: URL, _ challenge: String) -> URL? {
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: true) else { return nil }
        components.percentEncodedQuery = IdentityProof.challengeParameter + "=" + challenge
        return components.url
    }

    static func classify(_ response: ClientResponse, expected: ServerIdentity?, challenge: String, host: String)
        -> ProbeOutcome
    {
        if response.isHTML { return .notAnAPI }
        if response.status == 404 { return .olderServer }
        if response.status == 503, response.isJSON,
            (try? JSONDecoder().decode(ErrorEnvelope.self, from: response.body))?.error.code
                == APIErrorCode.identityUnavailable
        {
            return .identityUnavailable
        }
        guard response.status == 200 else { return .unreachable("answered \(response.status)") }
        // An answer that names a key twice (two instanceIds) could be read as either.
        guard StrictJSON.isValidWithoutRepeatedKeys(Array(response.body)) else {
            return .notHomeport("an answer that names a key twice")
        }
        guard let identity = try? JSONDecoder().decode(ServerIdentity.self, from: response.body) else {
            return .notHomeport("no identity in the answer")
        }
        let product = ServerText.clean(identity.product)
        if let expected {
            if identity.instanceId != expected.instanceId { return .mismatch(seen: identity.instanceId) }
            // A pinned key proves the installation whatever it now calls itself (its product
            // renamed, its protocol moved on): proven below, it is a match, and app-info then
            // updates what is enrolled. Without a pin, the name and version are all there is.
            guard expected.publicKey != nil || product == expected.product,
                expected.publicKey != nil || identity.protocolVersion == expected.protocolVersion
            else {
                return .productMismatch(product: product, protocolVersion: identity.protocolVersion)
            }
        } else if product.isEmpty || identity.protocolVersion < 1 {
            return .notHomeport("an identity without a product or a protocol version")
        }
        // A key named must prove itself for this challenge and this host; a pinned key must be
        // the one named.
        if let publicKey = identity.publicKey {
            guard let signature = identity.signature,
                InstallationKeyCheck.isValid(
                    signature: signature, publicKey: publicKey, instanceId: identity.instanceId, challenge: challenge,
                    host: host)
            else { return .unproven("its signature does not prove the key it names for this challenge and \(host)") }
            if let pinned = expected?.publicKey, pinned != publicKey {
                return .unproven("it proves another key than the one this device pinned")
            }
        } else if expected?.publicKey != nil {
            return .unproven("it proves no key, and this installation's key is pinned here")
        }
        return .match(
            ServerIdentity(
                product: product, protocolVersion: identity.protocolVersion, instanceId: identity.instanceId,
                publicKey: identity.publicKey))
    }

    private static func reason(_ error: ClientError) -> String {
        switch error {
        case .unreachable(_, let reason): reason
        case .tooLarge(_, let limit): "answer over \(limit) bytes"
        default: error.description
        }
    }
}

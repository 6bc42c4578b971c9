import Foundation
import HomeportCurl
import HomeportStorage
import Synchronization

/// What a provider's discovery document says (OpenID Connect Discovery §3), as far as Homeport
/// uses it.
struct ProviderMetadata: Sendable, Hashable {
    var issuer: String
    var authorizationEndpoint: String?
    var tokenEndpoint: String?
    var jwksURI: String
    /// How the token endpoint takes a client's credentials (`client_secret_basic` when unsaid).
    var tokenEndpointAuthMethods: [String]
    /// Whether the provider names itself (`iss`) in its answers to an authorization request
    /// (RFC 9207): then an answer without it is not its.
    var issInAuthorizationResponse = false

    /// The document in `data`, for `provider`; throws when it is not one, names another issuer
    /// (Discovery §4.3: the issuer must be exactly the one asked), or points where the server
    /// must not fetch from.
    init(_ data: Data, for provider: OIDCProvider) throws {
        guard let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] else {
            throw ProviderError("its discovery document is not a JSON object")
        }
        guard let issuer = object["issuer"] as? String, issuer == provider.issuer else {
            throw ProviderError("its discovery document names another issuer than \(provider.issuer)")
        }
        guard let keys = object["jwks_uri"] as? String, provider.isFetchable(keys) else {
            throw ProviderError("its discovery document has no usable jwks_uri")
        }
        self.issuer = issuer
        jwksURI = keys
        authorizationEndpoint = (object["authorization_endpoint"] as? String).flatMap {
            provider.isFetchable($0) ? $0 : nil
        }
        tokenEndpoint = (object["token_endpoint"] as? String).flatMap { provider.isFetchable($0) ? $0 : nil }
        tokenEndpointAuthMethods =
            (object["token_endpoint_auth_methods_supported"] as? [String]) ?? ["client_secret_basic"]
        issInAuthorizationResponse = object["authorization_response_iss_parameter_supported"] as? Bool ?? false
    }
}

/// The providers the operator configured, read from the database (so every replica serves the
/// same ones, and `oidc add` takes effect within a second), and what each one publishes: its
/// discovery document and its keys, fetched when first needed and kept.
///
/// A token signed with a key the set lacks fetches the set again, at most once a
/// ``refetchInterval`` per provider: a provider that rotated its key is followed within a
/// minute, and a flood of tokens naming made-up keys costs one fetch a minute.
final class ProviderDirectory: Sendable {
    let database: any Database
    let clock: any WallClock
    let session: CurlSession

    /// How long a fetched document and key set are kept before they are fetched again.
    static let lifetime: Int64 = 3600
    /// The shortest time between two fetches of one provider's keys or document.
    static let refetchInterval: Int64 = 60

    private struct Cached {
        var metadata: ProviderMetadata?
        var keys: JSONWebKeySet?
        var fetchedAt: Int64 = 0
        /// When the last fetch began, whatever came of it.
        var attemptedAt: Int64?
        var lastFailure: String?
    }

    private struct State {
        var providers: [OIDCProvider] = []
        var readAt: Int64?
        /// Keyed by provider id and issuer, so that a provider added again for another issuer
        /// starts afresh.
        var cache: [String: Cached] = [:]
    }

    private let state = Mutex(State())
    /// One fetch at a time: the others wait, then find what it fetched.
    private let fetching = Mutex(())

    init(database: any Database, clock: any WallClock, caFile: String? = nil) {
        self.database = database
        self.clock = clock
        session = CurlSession(caFile: caFile, timeoutSeconds: 10, byteLimit: 1 << 20)
    }

    /// The configured providers, read at most once a second.
    func providers() throws -> [OIDCProvider] {
        let now = clock.unixSeconds
        if let cached = state.withLock({ $0.readAt == now ? $0.providers : nil }) { return cached }
        let providers = try OIDCProviderStore(database).all()
        state.withLock {
            $0.providers = providers
            $0.readAt = now
        }
        return providers
    }

    /// The provider with this id, if one is configured.
    func provider(id: String) throws -> OIDCProvider? {
        try providers().first { $0.id == id }
    }

    /// The identity in an ID token from `provider`, checked against its published keys (fetched
    /// again once if the token names a key the set lacks).
    func identity(in token: String, from provider: OIDCProvider, nonce: String? = nil) throws -> ProviderIdentity {
        let check = IDTokenCheck(issuer: provider.issuer, audiences: provider.audiences)
        let keys = try published(provider, refetchKeys: false).keys
        do {
            return try check.identity(in: token, keys: keys, now: clock.unixSeconds, nonce: nonce)
        } catch is IDTokenCheck.UnknownKey {
            let fresh = try published(provider, refetchKeys: true).keys
            do {
                return try check.identity(in: token, keys: fresh, now: clock.unixSeconds, nonce: nonce)
            } catch is IDTokenCheck.UnknownKey {
                throw ProviderError("the ID token is signed with a key the provider does not publish")
            }
        }
    }

    /// The provider's discovery document (fetched when not at hand).
    func metadata(_ provider: OIDCProvider) throws -> ProviderMetadata {
        try published(provider, refetchKeys: false).metadata
    }

    private func published(_ provider: OIDCProvider, refetchKeys: Bool) throws -> (
        metadata: ProviderMetadata, keys: JSONWebKeySet
    ) {
        let key = provider.id + " " + provider.issuer
        // What is at hand needs no lock: only a fetch waits for another fetch.
        if !refetchKeys, let cached = state.withLock({ $0.cache[key] }), let metadata = cached.metadata,
            let keys = cached.keys, clock.unixSeconds - cached.fetchedAt < Self.lifetime
        {
            return (metadata, keys)
        }
        let attemptedBefore = state.withLock { $0.cache[key]?.attemptedAt }
        return try fetching.withLock { _ in
            let now = clock.unixSeconds
            let cached = state.withLock { $0.cache[key] } ?? Cached()
            let fresh = cached.metadata != nil && cached.keys != nil && now - cached.fetchedAt < Self.lifetime
            // Another thread fetched while this one waited: use what it found.
            let fetchedMeanwhile = cached.attemptedAt != attemptedBefore
            if let metadata = cached.metadata, let keys = cached.keys,
                fresh && (!refetchKeys || fetchedMeanwhile)
            {
                return (metadata, keys)
            }
            if let attempted = cached.attemptedAt, now - attempted < Self.refetchInterval {
                if let metadata = cached.metadata, let keys = cached.keys { return (metadata, keys) }
                throw ProviderError(cached.lastFailure ?? "the provider could not be reached")
            }
            state.withLock { $0.cache[key, default: Cached()].attemptedAt = now }
            do {
                let metadata = try ProviderMetadata(fetch(provider.discoveryURL, "discovery document"), for: provider)
                let keys = try JSONWebKeySet(fetch(metadata.jwksURI, "key set"))
                state.withLock {
                    $0.cache[key] = Cached(metadata: metadata, keys: keys, fetchedAt: now, attemptedAt: now)
                }
                return (metadata, keys)
            } catch {
                let failure = (error as? ProviderError)?.description ?? String(describing: error)
                state.withLock { $0.cache[key, default: Cached()].lastFailure = failure }
                if let metadata = cached.metadata, let keys = cached.keys, refetchKeys { return (metadata, keys) }
                throw ProviderError("\(provider.id): \(failure)")
            }
        }
    }

    private func fetch(_ url: String, _ what: String) throws -> Data {
        switch session.perform(url, headers: ["Accept: application/json"]) {
        case .success(let answer):
            guard answer.status == 200 else { throw ProviderError("its \(what) answered HTTP \(answer.status)") }
            return answer.body
        case .failure(let failure):
            throw ProviderError("its \(what) could not be fetched (\(failure.description))")
        }
    }
}

import Foundation
import HomeportWire

extension HomeportClient {
    /// A provider sign-in that waits for an address to make the account with: the provider gave
    /// none, or one that has an account on the server (sign in to that account and connect the
    /// provider there instead). Holds the pre-login token, which goes back only to the address
    /// that issued it; keep it in memory.
    public struct PendingProviderSignup: Sendable, Equatable {
        /// The address signed in at.
        public let address: ServerAddress
        /// The provider the sign-in came through.
        public let provider: String
        let token: String
    }

    /// The identity providers the server at `address` lets people sign in with (its `config`'s
    /// `socialaccount.providers`): run a provider's own sign-in with its `clientID` (its discovery
    /// document is `openIDConfigurationURL`) and hand the ID token to
    /// ``login(at:provider:idToken:)``. No credential is involved.
    public func identityProviders(at address: ServerAddress) async throws -> [AuthProvider] {
        let response = try await authRequest("GET", AllauthAppPath.config, at: address, body: nil)
        guard response.status == 200 else {
            throw ClientError.badAnswer(address: address.url, detail: "config answered \(response.kind)")
        }
        struct Config: Decodable {
            struct Data: Decodable {
                struct Social: Decodable { var providers: [AuthProvider] }
                var socialaccount: Social?
            }
            var data: Data
        }
        do {
            return try JSONDecoder().decode(Config.self, from: response.body).data.socialaccount?.providers ?? []
        } catch {
            throw ClientError.badAnswer(address: address.url, detail: "config is not an allauth config (\(error))")
        }
    }

    /// Signs in at `address` (which becomes the server's primary) with an ID token the app got
    /// from `provider` (one of ``identityProviders(at:)``, for its `clientID`), then enrolls the
    /// server as ``login(at:email:password:)`` does. The token is sent once and never stored.
    /// A second factor, a verification or approval still due comes back as with a password; a
    /// person the server does not know by that provider and whose address is missing or taken is
    /// ``SignInResult/providerSignupRequired(_:)``.
    public func login(at address: ServerAddress, provider: AuthProvider, idToken: String) async throws
        -> SignInResult
    {
        guard let clientID = provider.clientID else {
            throw ClientError.badAnswer(
                address: address.url, detail: "the server names no client id for provider \(provider.id)")
        }
        let body = try JSONEncoder().encode(
            AuthRequest.ProviderToken(
                provider: provider.id, token: .init(clientID: clientID, idToken: idToken)))
        try await proveKnownAddress(address)
        let response = try await authRequest("POST", AllauthAppPath.providerToken, at: address, body: body)
        return try await finishSignIn(response, at: address, email: "", provider: provider.id)
    }

    /// Completes a provider sign-in that waits for an address, making the account with `email`.
    /// An address that has an account throws ``ClientError/rejected(status:errors:)`` with
    /// `email_taken`.
    public func completeProviderSignup(_ pending: PendingProviderSignup, email: String) async throws -> SignInResult {
        let body = try JSONEncoder().encode(AuthRequest.ProviderSignup(email: email))
        let response = try await authRequest(
            "POST", AllauthAppPath.providerSignup, at: pending.address,
            credential: (pending.token, .issuer(pending.address)), body: body)
        return try await finishSignIn(
            response, at: pending.address, email: email, pendingToken: pending.token, provider: pending.provider)
    }
}

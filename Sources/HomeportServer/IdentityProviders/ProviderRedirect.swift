import Foundation
import HomeportCrypto
import HomeportHTTP
import HomeportStorage
import HomeportWire

/// Signing in through a provider's own pages, from the web door: the authorization code flow
/// with PKCE (S256), a `state` bound to the browser that began it by a cookie, and a `nonce` the
/// ID token must carry. The code is exchanged at the provider's token endpoint with the client's
/// secret (as its discovery document allows: `client_secret_basic` or `client_secret_post`),
/// and the ID token goes through the same checks and the same rules as one an app hands over.
struct ProviderRedirect: Sendable {
    /// The checks and rules an app's provider token goes through.
    let signIn: ProviderSignIn

    /// How long a sign-in may stay at the provider's pages.
    static let flowLifetime: Int64 = 600

    /// Where a provider sends the browser back to: `/account/provider/callback` at the public URL
    /// (or, without one, at the address the request came to).
    static let callbackPath = "/account/provider/callback"

    /// Where a sign-in through a provider's pages goes first.
    enum Start {
        /// To the provider's authorization endpoint; `binding` goes in the browser's cookie.
        case redirect(url: String, binding: String)
        /// Not now, and why (for a page).
        case unavailable(String)
        /// Too many sign-ins from this address.
        case rateLimited(retryAfter: Int64)
    }

    /// Begins a sign-in (or, with `account`, a connection) through provider `providerID`'s pages.
    func begin(providerID: String, connecting account: Account?, callback: String, address: String)
        throws -> Start
    {
        guard let provider = try signIn.directory.provider(id: providerID) else {
            return .unavailable("This server offers no such sign-in.")
        }
        // Each start stores a flow (and may fetch the provider's document): a sign-in's budget.
        do {
            try signIn.database.transaction {
                try RateLimiter($0, policy: signIn.settings.rateLimits).charge(
                    .loginPerAddress, RateLimiter.clientKey(address), now: signIn.clock.unixSeconds)
            }
        } catch let refusal as RateLimiter.Refusal {
            return .rateLimited(retryAfter: refusal.retryAfter)
        }
        let metadata: ProviderMetadata
        do {
            metadata = try signIn.directory.metadata(provider)
        } catch {
            signIn.logger.warning(
                "provider unreachable", metadata: ["provider": provider.id, "reason": String(describing: error)])
            return .unavailable("\(provider.name) cannot be reached now. Please try again later.")
        }
        guard let endpoint = metadata.authorizationEndpoint, metadata.tokenEndpoint != nil else {
            return .unavailable("\(provider.name) does not offer a sign-in page this server can use.")
        }
        let now = signIn.clock.unixSeconds
        let state = try SecretToken.generate(signIn.random)
        let nonce = try SecretToken.generate(signIn.random)
        let verifier = try SecretToken.generate(signIn.random)
        let binding = try SecretToken.generate(signIn.random)
        try signIn.database.transaction { db in
            try ProviderFlowStore(db).insert(
                stateHash: SecretToken.storedForm(of: state),
                .init(
                    bindingHash: SecretToken.storedForm(of: binding), providerID: provider.id, nonce: nonce,
                    verifier: verifier, connectUserID: account?.id, expiresAt: now + Self.flowLifetime),
                now: now)
        }
        let url = HandoffService.callback(
            endpoint,
            [
                "response_type": "code", "client_id": provider.clientID, "redirect_uri": callback,
                "scope": provider.scopes, "state": state, "nonce": nonce,
                "code_challenge": IdentityProof.base64URL(Digest.sha256(Array(verifier.utf8))),
                "code_challenge_method": "S256",
            ])
        return .redirect(url: url, binding: binding)
    }

    /// How a sign-in through a provider's pages ended.
    enum End {
        /// As a provider token's would: `provider` is the one it went through.
        case outcome(ProviderSignIn.Outcome, provider: OIDCProvider)
        /// It did not, and why (for a page).
        case failed(String)
    }

    /// Completes a sign-in through a provider's pages with what the browser brought back: the
    /// flow's `state` (once, and only from the browser whose cookie holds `binding`), then the
    /// provider's `code`, or its `error`.
    func complete(
        state: String, code: String?, error: String?, binding: String?, callback: String, address: String,
        current: Caller, issuer: String? = nil
    ) throws -> End {
        let now = signIn.clock.unixSeconds
        guard state.utf8.count <= 128,
            let flow = try signIn.database.transaction({
                try ProviderFlowStore($0).claim(stateHash: SecretToken.storedForm(of: state), now: now)
            })
        else { return .failed("This sign-in has expired or was already used. Please start again.") }
        guard let binding,
            Digest.constantTimeEquals(
                Array(SecretToken.storedForm(of: binding).utf8), Array(flow.bindingHash.utf8))
        else {
            signIn.logger.notice("provider sign-in refused", metadata: ["reason": "another browser's state"])
            return .failed("This sign-in was started in another browser. Please start again from this one.")
        }
        guard let provider = try signIn.directory.provider(id: flow.providerID) else {
            return .failed("This server no longer offers that sign-in.")
        }
        // RFC 9207: the answer names the provider that gave it. Another's answer on this flow's
        // state (a provider that sent the browser on to another, to have that one's code and
        // this flow's verifier sent to it) goes no further: its code is never exchanged.
        if issuer.map({ $0 != provider.issuer })
            ?? (try? signIn.directory.metadata(provider).issInAuthorizationResponse) == true
        {
            signIn.logger.notice(
                "provider sign-in refused", metadata: ["provider": provider.id, "reason": "another issuer's answer"])
            return .failed("\(provider.name)'s answer could not be accepted. Please start again.")
        }
        if let error {
            let said = String(error.unicodeScalars.filter { ("a"..."z").contains($0) || $0 == "_" }.prefix(64))
            return .failed(
                said == "access_denied"
                    ? "You declined to sign in at \(provider.name)." : "\(provider.name) did not sign you in (\(said))."
            )
        }
        guard let code, !code.isEmpty, code.utf8.count <= 2048 else {
            return .failed("\(provider.name) sent you back without a sign-in. Please start again.")
        }
        let checked = try signIn.checkedToken(
            providerID: provider.id, clientID: provider.clientID, address: address, now: now
        ) {
            provider in
            let idToken = try exchangeCode(code, provider: provider, verifier: flow.verifier, callback: callback)
            return try signIn.directory.identity(in: idToken, from: provider, nonce: flow.nonce)
        }
        switch checked {
        case .refused(.invalidToken):
            return .failed("\(provider.name)'s answer could not be accepted. Please try again later.")
        case .refused(let outcome):
            return .outcome(outcome, provider: provider)
        case .accepted(let provider, let identity):
            if let userID = flow.connectUserID {
                guard case .signedIn(_, let account) = current, account.id == userID else {
                    return .failed("Sign in again to connect \(provider.name).")
                }
                return .outcome(try signIn.connect(provider, identity, account: account, now: now), provider: provider)
            }
            return .outcome(
                try signIn.resolveRetrying(provider, identity, address: address, kind: .web, current: current),
                provider: provider)
        }
    }

    /// The ID token the provider's token endpoint gives for `code` (authorization code grant,
    /// with the PKCE verifier and the client's secret when it has one).
    private func exchangeCode(_ code: String, provider: OIDCProvider, verifier: String, callback: String) throws
        -> String
    {
        let metadata = try signIn.directory.metadata(provider)
        guard let endpoint = metadata.tokenEndpoint else { throw ProviderError("it has no token endpoint") }
        var fields: KeyValuePairs<String, String> = [
            "grant_type": "authorization_code", "code": code, "redirect_uri": callback, "code_verifier": verifier,
            "client_id": provider.clientID,
        ]
        var headers = ["Content-Type: application/x-www-form-urlencoded", "Accept: application/json"]
        if let file = provider.clientSecretFile {
            guard let text = try? String(contentsOfFile: file, encoding: .utf8),
                case let secret = text.trimmingCharacters(in: .whitespacesAndNewlines), !secret.isEmpty
            else { throw ProviderError("its client secret file \(file) cannot be read") }
            if metadata.tokenEndpointAuthMethods.contains("client_secret_basic")
                || !metadata.tokenEndpointAuthMethods.contains("client_secret_post")
            {
                // RFC 6749 §2.3.1: each form-encoded, then Basic.
                let pair = HandoffService.formEncoded(provider.clientID) + ":" + HandoffService.formEncoded(secret)
                headers.append("Authorization: Basic " + Data(pair.utf8).base64EncodedString())
            } else {
                fields = [
                    "grant_type": "authorization_code", "code": code, "redirect_uri": callback,
                    "code_verifier": verifier, "client_id": provider.clientID, "client_secret": secret,
                ]
            }
        }
        let body = fields.map { $0.key + "=" + HandoffService.formEncoded($0.value) }.joined(separator: "&")
        switch signIn.directory.session.perform(endpoint, headers: headers, body: Data(body.utf8)) {
        case .success(let answer):
            guard answer.status == 200 else { throw ProviderError("its token endpoint answered HTTP \(answer.status)") }
            guard let object = (try? JSONSerialization.jsonObject(with: answer.body)) as? [String: Any],
                let idToken = object["id_token"] as? String
            else { throw ProviderError("its token endpoint gave no ID token") }
            return idToken
        case .failure(let failure):
            throw ProviderError("its token endpoint could not be reached (\(failure.description))")
        }
    }
}

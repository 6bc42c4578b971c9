import Foundation
import HomeportWire

extension HomeportClient {
    /// A browser sign-in under way (the server's handoff): open ``url`` in the system browser
    /// (`ASWebAuthenticationSession` on Apple platforms); when the browser comes back to the
    /// redirect, pass that URL to ``HomeportClient/completeBrowserSignIn(_:callbackURL:)``. It holds the
    /// secret the code is exchanged with; keep it in memory only.
    public struct BrowserSignIn: Sendable, Equatable {
        /// The address the sign-in was asked at, where the code is exchanged.
        public let address: ServerAddress
        /// The page to open in the system browser.
        public let url: String
        /// Where the browser comes back to.
        public let redirect: String
        /// How many seconds the page waits for the person.
        public let expiresIn: Int
        let state: String
        let verifier: String
    }

    /// Asks the server at `address` for a browser sign-in that comes back to `redirect` (the app's
    /// own scheme, or `http://127.0.0.1:PORT/…` where the app listens) and names this device
    /// `deviceName` on the page the person confirms. A random verifier stays here; only its
    /// SHA-256 is sent (PKCE).
    public func beginBrowserSignIn(at address: ServerAddress, redirect: String, deviceName: String) async throws
        -> BrowserSignIn
    {
        // 32 random bytes each, from the generator the identity probes' challenges come from.
        let verifier = InstallationKeyCheck.challenge()
        let state = InstallationKeyCheck.challenge()
        let body = try JSONEncoder().encode(
            AuthRequest.Handoff(
                codeChallenge: IdentityProof.base64URL(InstallationKeyCheck.sha256(Array(verifier.utf8))),
                redirectURI: redirect,
                state: state, deviceName: deviceName))
        // The page it names is where the person signs in: only a proven address names it.
        try await proveKnownAddress(address)
        let response = try await authRequest("POST", AllauthAppPath.handoff, at: address, body: body)
        struct Answer: Decodable {
            struct Data: Decodable {
                var url: String
                var expiresIn: Int
                enum CodingKeys: String, CodingKey {
                    case url
                    case expiresIn = "expires_in"
                }
            }
            var data: Data
        }
        guard response.status == 200 else {
            throw ClientError.rejected(
                status: response.status, errors: (try? decodeEnvelope(response, address))?.errors ?? [])
        }
        guard let answer = try? JSONDecoder().decode(Answer.self, from: response.body),
            let scheme = URLComponents(string: answer.data.url)?.scheme?.lowercased(),
            ["http", "https"].contains(scheme)
        else {
            throw ClientError.badAnswer(address: address.url, detail: "the handoff's answer names no web page")
        }
        return BrowserSignIn(
            address: address, url: answer.data.url, redirect: redirect, expiresIn: answer.data.expiresIn,
            state: state, verifier: verifier)
    }

    /// Completes a browser sign-in with the URL the browser came back to: its `state` must be this
    /// sign-in's, and its `code` is exchanged (with the verifier) at the address the sign-in was
    /// asked at, then the server is enrolled as ``login(at:email:password:)`` does. A refusal in
    /// the browser throws ``ClientError/rejected(status:errors:)`` with `access_denied`.
    public func completeBrowserSignIn(_ pending: BrowserSignIn, callbackURL: String) async throws -> SignInResult {
        guard callbackURL.hasPrefix(pending.redirect), let components = URLComponents(string: callbackURL) else {
            throw ClientError.invalidInput("the browser came back to another address than \(pending.redirect)")
        }
        var query: [String: String] = [:]
        for item in components.queryItems ?? [] where query[item.name] == nil { query[item.name] = item.value ?? "" }
        guard query["state"] == pending.state else {
            throw ClientError.invalidInput("the browser came back from another sign-in (its state is not this one's)")
        }
        if let error = query["error"] {
            throw ClientError.rejected(
                status: 400,
                errors: [
                    AuthFieldError(
                        code: ServerText.clean(error, limit: 64), param: nil,
                        message: "The sign-in was refused in the browser.")
                ])
        }
        guard let code = query["code"], !code.isEmpty else {
            throw ClientError.invalidInput("the browser came back without a code")
        }
        let body = try JSONEncoder().encode(AuthRequest.HandoffToken(code: code, codeVerifier: pending.verifier))
        try await proveKnownAddress(pending.address)
        let response = try await authRequest("POST", AllauthAppPath.handoffToken, at: pending.address, body: body)
        return try await finishSignIn(response, at: pending.address, email: "")
    }
}

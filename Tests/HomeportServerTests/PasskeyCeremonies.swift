import Foundation
import HomeportTestSupport
import HomeportWire
import Testing

@testable import HomeportServer

/// The origin the passkey tests' servers run their ceremonies on (their `--public-url`).
let passkeyOrigin = "https://books.example.net"

/// The options (`creation_options`, `request_options`) in an answer's `data`.
func passkeyOptions(_ answer: RawResponse, _ key: String) throws -> [String: Any] {
    #expect(answer.status == 200, "\(answer.text)")
    let data = try #require(answer.jsonObject?["data"] as? [String: Any], "\(answer.text)")
    return try #require(data[key] as? [String: Any], "\(answer.text)")
}

/// Signs `email` up (open sign-up) or in and confirms the password: a session that may add
/// passkeys.
func confirmedSession(_ server: AccountsHarness, _ email: String, password: String = "correct horse battery")
    throws -> String
{
    let token = try server.signIn(email, password)
    let confirmed = try server.app("POST", "auth/reauthenticate", token: token, json: ["password": password])
    #expect(confirmed.status == 200, "\(confirmed.text)")
    return token
}

/// Adds a passkey of `authenticator` to the signed-in, confirmed `token`'s account: one that signs
/// in alone (`passwordless`), or a key asked for as a second factor; `verified` is whether the
/// authenticator says it verified its person.
@discardableResult
func addPasskey(
    _ server: AccountsHarness, _ token: String, _ authenticator: SoftAuthenticator, name: String? = nil,
    passwordless: Bool = true, verified: Bool = true
) throws -> RawResponse {
    let created = try passkeyOptions(
        server.app("GET", AllauthAppPath.webAuthn + (passwordless ? "?passwordless" : ""), token: token),
        "creation_options")
    var body: [String: Any] = [
        "credential": try authenticator.register(created, origin: passkeyOrigin, verified: verified)
    ]
    if let name { body["name"] = name }
    return try server.app("POST", AllauthAppPath.webAuthn, token: token, json: body)
}

/// A sign-in with `authenticator`'s passkey alone: the options (a new pre-login token), then its
/// answer, changed by `lie` on the way.
func passkeySignIn(
    _ server: AccountsHarness, _ authenticator: SoftAuthenticator, origin: String = passkeyOrigin,
    verified: Bool = true, lie: (inout [String: Any]) -> Void = { _ in }
) throws -> RawResponse {
    let asked = try server.app("GET", AllauthAppPath.webAuthnLogin)
    let request = try passkeyOptions(asked, "request_options")
    let token = try #require((asked.jsonObject?["meta"] as? [String: Any])?["session_token"] as? String)
    var credential = try authenticator.assert(request, origin: origin, verified: verified)
    lie(&credential)
    return try server.app("POST", AllauthAppPath.webAuthnLogin, token: token, json: ["credential": credential])
}

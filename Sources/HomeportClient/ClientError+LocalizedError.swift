import Foundation

/// What an app shows its user: `localizedDescription` is ``errorDescription`` (what happened, in
/// the user's terms), and ``recoverySuggestion`` says what they can do. ``ClientError/description``
/// stays the precise sentence for logs.
extension ClientError: LocalizedError {
    /// What happened, for the app's user.
    public var errorDescription: String? {
        switch self {
        case .invalidAddress: "That is not a server address."
        case .plainHTTPNotAllowed: "This address is not encrypted (http://)."
        case .identityMismatch, .alternativeDisowned: "This address belongs to a different server."
        case .probeFailed, .notHomeport: "This address did not answer as the server."
        case .addressNotApplicable(let text): Self.sentence(text)
        case .notAnAPI: "Something between you and the server answered instead of it."
        case .sessionKept: "The server answered in a way that could not be trusted; you are still signed in."
        case .claimNotConfirmed: "The server at this address could not be confirmed."
        case .signInNotKept(let reason, _): reason.errorDescription
        case .unsafeDirectory: "Your sign-ins cannot be stored safely on this device."
        case .offHostRedirect: "The server sent you to another address, which was not followed."
        case .unreachable: "The server could not be reached."
        case .tooLarge: "The server's answer was too large."
        case .noVerifiedAddress: "None of the server's addresses can be reached from this network."
        case .signedOut: "You were signed out of this server."
        case .rejected(_, let errors):
            errors.isEmpty ? "The server refused." : Self.sentence(errors.map(\.message).joined(separator: " "))
        case .refused(_, _, _, let message, _): Self.sentence(message)
        case .invalidInput(let text): Self.sentence(text)
        case .badAnswer: "The server's answer could not be read."
        case .unknownServer, .ambiguousServer: "That server is not among yours."
        case .vault: "Your sign-in could not be stored or read on this device."
        }
    }

    /// `text` (a server's message, or the library's own) cleaned of controls, as a sentence: a
    /// capital first, a full stop last.
    private static func sentence(_ text: String) -> String {
        let cleaned = ServerText.clean(text).trimmingCharacters(in: .whitespaces)
        guard let first = cleaned.first else { return "" }
        let capitalized = first.uppercased() + cleaned.dropFirst()
        return ".!?…".contains(capitalized.last ?? ".") ? capitalized : capitalized + "."
    }

    /// What the app's user can do about it, when there is something.
    public var recoverySuggestion: String? {
        switch self {
        case .invalidAddress: "Enter the address as https://host or https://host:port."
        case .plainHTTPNotAllowed:
            "Use the server's https:// address, or allow plain HTTP for this address if it is on your own network."
        case .identityMismatch, .alternativeDisowned, .claimNotConfirmed:
            "Nothing was sent to it. If the server was reinstalled, add it again."
        case .probeFailed, .notHomeport, .offHostRedirect, .badAnswer, .tooLarge:
            "Nothing was sent to it. Check the address, or try again later."
        case .notAnAPI:
            "A sign-in page or a captive portal may be in the way: open the address in a browser, then try again."
        case .sessionKept: "If you signed out elsewhere, sign in again."
        case .signInNotKept(let reason, _): reason.recoverySuggestion
        case .unsafeDirectory: "Reinstall the app, or ask its developer."
        case .unreachable, .noVerifiedAddress: "Check your connection, or try again when you are home."
        case .signedOut: "Sign in again."
        case .vault: "Try again; if it persists, sign in again."
        case .unknownServer, .ambiguousServer: "Choose a server from your list."
        case .addressNotApplicable, .rejected, .refused, .invalidInput: nil
        }
    }
}

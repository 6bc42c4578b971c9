/// Who is calling, as the one session reader found it: what a handler gets instead of a token.
package enum Caller: Sendable {
    /// No credential came with the request (an empty or blank token counts as none).
    case none
    /// A credential came that names no live session of this door: expired, signed out, rotated
    /// out, never issued, another door's, or sent twice with different values.
    case invalid
    /// A live pre-login session (nobody in it; it carries a standing), and its token.
    case preLogin(Session, token: String)
    /// A live session of an approved account.
    case signedIn(Session, Account)

    /// The live session, pre-login or signed in.
    package var session: Session? {
        switch self {
        case .preLogin(let session, _), .signedIn(let session, _): session
        case .none, .invalid: nil
        }
    }

    /// Whether a signed-in session came with the request.
    package var isSignedIn: Bool {
        if case .signedIn = self { return true }
        return false
    }
}

/// Who may invite from the app (`serve --invitations`). The operator invites at the shell
/// whatever it says (`homeport-server invites create`).
package enum InvitationPolicy: String, Sendable, CaseIterable {
    /// Accounts in the `admin` group (the default).
    case admins
    /// Every signed-in account; a member gives only groups it is in.
    case members
    /// Nobody, from the app.
    case off

    /// Whether `account` may make an invitation from the app.
    func allows(_ account: Account) -> Bool {
        switch self {
        case .admins: account.isAdmin
        case .members: true
        case .off: false
        }
    }
}

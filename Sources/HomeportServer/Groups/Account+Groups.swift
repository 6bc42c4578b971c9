extension Account {
    /// Whether it is in `admin`, Homeport's own group (as the session reader read its groups).
    var isAdmin: Bool { groups?.contains(AccountGroups.admin) == true }
}

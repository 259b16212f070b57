"""The checks at the door (private): `checks` turns dicts, frames and arrays into validated
float64 rows and checks labels; `params` checks hyper-parameters in River's wording."""

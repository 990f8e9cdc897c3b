"""Head analyses (METHODS 7-9): plain functions over attention maps, tables and figures."""

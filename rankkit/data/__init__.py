"""Reading and validating what comes in: tasks, tables, spec strings and the files a user is handed."""

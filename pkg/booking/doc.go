package booking

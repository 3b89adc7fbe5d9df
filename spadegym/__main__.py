from spadegym.cli import main

main()
